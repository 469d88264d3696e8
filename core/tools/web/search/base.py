"""The web search interface: a backend takes a query and returns results; the tool shows
them numbered, as "title — url — snippet"."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Protocol

from core.tools.web.guard import WebError

_TAGS = re.compile(r"<[^>]+>")
_SPACES = re.compile(r"\s+")


class SearchError(WebError):
    """The search service failed or refused; the message says what happened."""


class SearchUnavailable(Exception):
    """The configured backend cannot work (no URL, no key, a missing package): why, and
    how to fix it, in plain words. The tool is then not offered."""


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    """One search service (SearXNG, Brave, DuckDuckGo, …)."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """At most ``max_results`` results, best first; ``SearchError`` on failure."""
        ...


def clean(text: object) -> str:
    """A snippet or title as plain text: tags removed, entities decoded, one line."""
    plain = html.unescape(_TAGS.sub("", str(text or "")))
    return _SPACES.sub(" ", plain).strip()


def format_results(backend: str, query: str, results: list[SearchResult]) -> str:
    if not results:
        return (
            f"No results for {query!r} ({backend}). Try other or fewer keywords, or another "
            "language."
        )
    lines = [f"Results for {query!r} ({backend}):"]
    for i, r in enumerate(results, 1):
        snippet = r.snippet if len(r.snippet) <= 300 else r.snippet[:297] + "…"
        lines.append(f"{i}. {r.title or '(no title)'} — {r.url} — {snippet or '(no snippet)'}")
    lines.append("Read a result with fetch_url(url) before relying on it; cite its URL.")
    return "\n".join(lines)
