"""web_search's backends (one module each) and the one chosen by ``web.search_backend``."""

from __future__ import annotations

import importlib.util
import os

from core.config_tools import WebSettings
from core.tools.web.search.base import (
    SearchBackend,
    SearchError,
    SearchResult,
    SearchUnavailable,
    format_results,
)

__all__ = [
    "SearchBackend",
    "SearchError",
    "SearchResult",
    "SearchUnavailable",
    "check_backend",
    "format_results",
    "make_backend",
]


def make_backend(web: WebSettings) -> SearchBackend:
    """The configured backend, or ``SearchUnavailable`` saying what to set."""
    key = check_backend(web)
    if web.search_backend == "searxng":
        from core.tools.web.search.searxng import SearxngBackend

        return SearxngBackend(web)
    if web.search_backend == "brave":
        from core.tools.web.search.brave import BraveBackend

        return BraveBackend(web, key)
    from core.tools.web.search.duckduckgo import DuckDuckGoBackend

    return DuckDuckGoBackend(web)


def check_backend(web: WebSettings) -> str:
    """``SearchUnavailable`` if the configured backend cannot work, without building it
    (nothing imported, nothing contacted); returns the API key when it needs one."""
    choice = web.search_backend
    if choice == "none":
        raise SearchUnavailable(
            'web search is off (web.search_backend = "none"); choose "searxng", "brave" or '
            '"duckduckgo" in config.toml'
        )
    if choice == "searxng":
        if not web.search_url:
            raise SearchUnavailable(
                'web.search_backend is "searxng" but web.search_url is empty: set it to your '
                'SearXNG instance, e.g. "http://searxng.internal:8080" (with json in its '
                "search.formats)"
            )
        return ""
    if choice == "brave":
        if not web.search_api_key_env:
            raise SearchUnavailable(
                'web.search_backend is "brave" but web.search_api_key_env is empty: name the '
                'environment variable holding the key, e.g. "BRAVE_API_KEY"'
            )
        key = os.environ.get(web.search_api_key_env, "")
        if not key:
            raise SearchUnavailable(
                f"the Brave Search API key is missing: export {web.search_api_key_env}=... "
                "(named by web.search_api_key_env)"
            )
        return key
    if importlib.util.find_spec("ddgs") is None:
        raise SearchUnavailable(
            'web.search_backend is "duckduckgo" but the ddgs package is not installed: '
            "pip install ddgs (or choose searxng or brave)"
        )
    return ""
