"""The web tools agents call: web_search, fetch_url and download.

Every fetch goes through :class:`core.tools.web.fetcher.Fetcher` (the SSRF guard, the
size and time caps), imported on the first fetch; what the guard or the fetch refuses
comes back to the model as a :class:`ToolRetry` it can read and act on.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from core.agent.context import ToolContext
from core.errors import ToolRetry, WorkspaceError
from core.tools.registry import Tool, tool
from core.tools.web.guard import WebError
from core.tools.web.search import SearchUnavailable, format_results, make_backend

if TYPE_CHECKING:
    from core.tools.web.fetcher import Fetched

# Room left in a tool result (limits.tool_result_chars) for the header and the page note.
_FRAME_CHARS = 400


@tool(category="web", network=True)
async def web_search(ctx: ToolContext, query: str) -> str:
    """Search the web. Returns numbered results as "title — url — snippet"; read the
    promising ones with fetch_url and cite their URLs.

    Args:
        query: What to look for, in a few keywords, e.g. "eurasian otter population rhine".
    """
    if not query.strip():
        raise ToolRetry("the query is empty: give a few keywords")
    web = ctx.settings.web
    try:
        backend = make_backend(web)
        results = await backend.search(query.strip(), web.max_results)
    except (SearchUnavailable, WebError) as exc:
        raise ToolRetry(f"web search failed: {exc}") from None
    return format_results(backend.name, query.strip(), results)


@tool(category="web", network=True)
async def fetch_url(ctx: ToolContext, url: str, page: int = 1) -> str:
    """Read a web page or a text file from the internet. A page comes back as its readable
    text (the main content as Markdown, with its title and final URL); text and JSON as
    they are; long texts in pages. Private and local network addresses are refused.

    Args:
        url: The full http(s) address, e.g. "https://example.org/report".
        page: Which page of a long text to read (1 = the start).
    """
    from core.tools.web.reader import describe_binary, kind_of, page_of, readable

    if page < 1:
        raise ToolRetry("page starts at 1")
    fetched = await _fetch(ctx, url, accept="text/html,application/xhtml+xml,text/*,*/*;q=0.5")
    if kind_of(fetched) == "binary":
        return describe_binary(fetched)
    text = await readable(fetched)
    size = min(
        ctx.settings.web.max_chars,
        max(200, ctx.settings.limits.tool_result_chars - _FRAME_CHARS),
    )
    chunk, pages = page_of(text.text, size, page)
    if page > pages:
        raise ToolRetry(f"{fetched.url} has {pages} page(s) of text; ask for 1–{pages}")
    head = [f"URL: {fetched.url}"]
    if fetched.redirects:
        head[0] += f" (redirected from {url.strip()})"
    if text.title:
        head.insert(0, f"Title: {text.title}")
    if pages > 1:
        head.append(f"Page {page} of {pages} ({len(text.text)} characters in all)")
    body = chunk or "(the page has no readable text)"
    more = ""
    if page < pages:
        more = f'\n[… {pages - page} more page(s): fetch_url(url="{url.strip()}", page={page + 1})]'
    return "\n".join(head) + "\n\n" + body + more


@tool(read_only=False, category="web", network=True)
async def download(ctx: ToolContext, url: str, path: str = "") -> str:
    """Download a file from the internet (a CSV, a PDF, an image, …) into the run's
    workspace, for read_file or run_code to open. Same rules as fetch_url: private and
    local network addresses are refused, and the size is capped.

    Args:
        url: The full http(s) address of the file.
        path: Where to save it in the workspace, e.g. "data/prices.csv" ("" = the file name
            in the URL).
    """
    fetched = await _fetch(ctx, url, accept="*/*")
    target = path.strip() or _name_from(fetched.url)
    try:
        info = await ctx.workspace.write(ctx.run_id, target, fetched.data)
    except WorkspaceError as exc:
        raise ToolRetry(str(exc)) from None
    served = fetched.content_type or "no type given"
    return f"Saved {info.describe()} from {fetched.url} (served as {served})."


async def _fetch(ctx: ToolContext, url: str, accept: str) -> Fetched:
    # Imported on the first fetch: httpx and its transport are 0.1 s and 10 MB of a
    # process's start, and most processes never fetch.
    from core.tools.web.fetcher import fetcher_for

    try:
        return await fetcher_for(ctx.settings.web).get(url, accept=accept)
    except WebError as exc:
        raise ToolRetry(str(exc)) from None


def _name_from(url: str) -> str:
    name = posixpath.basename(unquote(urlsplit(url).path)).strip()
    return name if name and name not in (".", "..") else "download"


WEB_TOOLS: tuple[Tool, ...] = (web_search, fetch_url, download)
