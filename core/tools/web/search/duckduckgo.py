"""No key needed: the ``ddgs`` library (DuckDuckGo and the other engines it aggregates).

ddgs is synchronous (its HTTP client, primp, is written in Rust), so a search runs in a
thread. It scrapes public result pages rather than calling an API, so it may be rate
limited; SearXNG or Brave are the dependable choices for a team. Tests only construct it:
a search would need the internet.
"""

from __future__ import annotations

import asyncio
from typing import Any

from core.config_tools import WebSettings
from core.tools.web.search.base import SearchError, SearchResult, clean


class DuckDuckGoBackend:
    name = "duckduckgo"

    def __init__(self, web: WebSettings) -> None:
        from ddgs import DDGS  # imported here: only this backend needs it

        self.web = web
        self._ddgs = DDGS(timeout=max(1, round(web.timeout_s)))

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException

        try:
            items: list[dict[str, Any]] = await asyncio.to_thread(
                self._ddgs.text, query, max_results=max_results, backend="auto"
            )
        except DDGSException as exc:
            if "No results" in str(exc):
                return []
            raise SearchError(f"the DuckDuckGo search failed ({exc}); try again later") from None
        return [
            SearchResult(clean(i.get("title")), str(i.get("href") or ""), clean(i.get("body")))
            for i in items
            if i.get("href")
        ][:max_results]
