"""The web tools: ``web_search`` (a backend chosen in config), ``fetch_url`` and
``download``, every fetch behind the SSRF guard (:mod:`core.tools.web.guard`)."""

from __future__ import annotations

from core.config import Settings
from core.tools.registry import ToolRegistry
from core.tools.web.search import SearchUnavailable, check_backend
from core.tools.web.tools import download, fetch_url, web_search


def register(registry: ToolRegistry, settings: Settings) -> None:
    """Add fetch_url and download, and web_search if its backend is configured (else
    record why it is not offered: ``caramba tools`` and ``caramba doctor`` show it)."""
    registry.register(fetch_url)
    registry.register(download)
    try:
        check_backend(settings.web)
    except SearchUnavailable as exc:
        registry.mark_unavailable(web_search.name, str(exc))
    else:
        registry.register(web_search)
