"""SearXNG, self-hosted metasearch: ``GET {web.search_url}/search?q=…&format=json``.

The instance must allow the JSON format (``search.formats`` in its settings.yml); one that
does not answers 403, which is reported as such.
"""

from __future__ import annotations

from typing import Any

import httpx

from core.config_tools import WebSettings
from core.tools.web.fetcher import api_client_for
from core.tools.web.search.base import SearchError, SearchResult, clean


class SearxngBackend:
    name = "searxng"

    def __init__(self, web: WebSettings) -> None:
        self.web = web
        base = web.search_url.rstrip("/")
        self.endpoint = base if base.endswith("/search") else f"{base}/search"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {"q": query, "format": "json", "pageno": "1", "safesearch": "1"}
        try:
            response = await api_client_for(self.web).get(
                self.endpoint, params=params, headers={"Accept": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise SearchError(
                f"the SearXNG instance at {self.endpoint} cannot be reached "
                f"({str(exc) or type(exc).__name__}); try again later"
            ) from None
        if response.status_code == 403:
            raise SearchError(
                f"the SearXNG instance at {self.endpoint} refused JSON (HTTP 403): its "
                "operator must add json to search.formats in settings.yml"
            )
        if response.status_code != 200:
            raise SearchError(f"SearXNG answered HTTP {response.status_code}; try again later")
        try:
            body: Any = response.json()
            items = body.get("results") or []
        except (ValueError, AttributeError):
            raise SearchError("SearXNG answered something that is not its JSON") from None
        results = [
            SearchResult(clean(i.get("title")), str(i.get("url") or ""), clean(i.get("content")))
            for i in items
            if isinstance(i, dict) and i.get("url")
        ]
        return results[:max_results]
