"""The Brave Search API: ``GET https://api.search.brave.com/res/v1/web/search?q=…``
with the key in ``X-Subscription-Token`` (from the variable ``web.search_api_key_env``
names). ``web.search_url``, when set, replaces the endpoint (a proxy, or a test fake)."""

from __future__ import annotations

from typing import Any

import httpx

from core.config_tools import WebSettings
from core.tools.web.fetcher import api_client_for
from core.tools.web.search.base import SearchError, SearchResult, clean

ENDPOINT = "https://api.search.brave.com/res/v1/web/search"


class BraveBackend:
    name = "brave"

    def __init__(self, web: WebSettings, api_key: str) -> None:
        self.web = web
        self.endpoint = web.search_url or ENDPOINT
        self._key = api_key

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {"q": query, "count": str(min(max_results, 20))}
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key}
        try:
            response = await api_client_for(self.web).get(
                self.endpoint, params=params, headers=headers
            )
        except httpx.HTTPError as exc:
            raise SearchError(
                f"the Brave Search API cannot be reached ({str(exc) or type(exc).__name__}); "
                "try again later"
            ) from None
        if response.status_code in (401, 403):
            raise SearchError(
                f"the Brave Search API refused the key (HTTP {response.status_code}); the "
                f"operator must check {self.web.search_api_key_env}"
            )
        if response.status_code == 429:
            raise SearchError("the Brave Search API's rate limit was reached; wait and retry")
        if response.status_code != 200:
            raise SearchError(f"the Brave Search API answered HTTP {response.status_code}")
        try:
            body: Any = response.json()
            items = (body.get("web") or {}).get("results") or []
        except (ValueError, AttributeError):
            raise SearchError("the Brave Search API answered something that is not JSON") from None
        results = [
            SearchResult(
                clean(i.get("title")), str(i.get("url") or ""), clean(i.get("description"))
            )
            for i in items
            if isinstance(i, dict) and i.get("url")
        ]
        return results[:max_results]
