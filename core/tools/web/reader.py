"""What an agent reads of a fetched resource: HTML as readable text (trafilatura), text
and JSON as they are, anything else described; long text cut into pages."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from core.tools.web.fetcher import Fetched
from core.workspace.base import human_size

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-ndjson",
        "application/csv",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "image/svg+xml",
    }
)


@dataclass(frozen=True)
class Readable:
    """The text of a fetched resource, and its title when it is a web page."""

    text: str
    title: str = ""


def kind_of(fetched: Fetched) -> str:
    """``"html"``, ``"text"`` or ``"binary"``: how to read it (sniffed when untyped)."""
    media = fetched.content_type
    if media in HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml")):
        return "text"
    if media in ("", "application/octet-stream"):
        head = fetched.data[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
        if b"\x00" not in head and _decodes(fetched.data[:4096]):
            return "text"
    return "binary"


async def readable(fetched: Fetched) -> Readable:
    """The resource as text. HTML goes through trafilatura in a thread (it is CPU-bound
    and synchronous): the main content as Markdown, without menus, footers and scripts."""
    if kind_of(fetched) == "html":
        return await asyncio.to_thread(_html_to_text, fetched)
    return Readable(decode(fetched))


def decode(fetched: Fetched) -> str:
    return fetched.data.decode(fetched.charset or "utf-8", errors="replace")


def describe_binary(fetched: Fetched) -> str:
    """A resource that is not text: what it is, and how an agent can use it."""
    media = fetched.content_type or "of an unknown type"
    return (
        f"{fetched.url} is {media} ({human_size(len(fetched.data))}), not text, so it is not "
        "shown. Save it with download(url, path) to open it with run_code, or look for an "
        "HTML or text version."
    )


def page_of(text: str, size: int, page: int) -> tuple[str, int]:
    """Page ``page`` (from 1) of ``text`` in pages of ``size`` characters, and how many
    pages there are; a page ends at a line break when one is near its end."""
    pages: list[str] = []
    rest = text
    while rest:
        if len(rest) <= size:
            pages.append(rest)
            break
        cut = rest.rfind("\n", size // 2, size)
        cut = cut + 1 if cut > 0 else size
        pages.append(rest[:cut])
        rest = rest[cut:]
    if not pages:
        pages = [""]
    if page > len(pages):
        return "", len(pages)
    return pages[page - 1], len(pages)


def _html_to_text(fetched: Fetched) -> Readable:
    import trafilatura  # ~0.2 s to import: only when a page is read

    html: str | bytes = fetched.data
    if fetched.charset:
        html = decode(fetched)
    meta = trafilatura.extract_metadata(html, default_url=fetched.url)
    title = (meta.title or "") if meta is not None else ""
    text = trafilatura.extract(
        html,
        url=fetched.url,
        output_format="markdown",
        include_tables=True,
        include_links=False,
        include_comments=False,
        favor_recall=True,
    )
    if not text:
        # Too little "main content" for the extractor (a short page, an app shell): all
        # the visible text is better than nothing.
        text = trafilatura.html2txt(html) or ""
    return Readable(text.strip(), title.strip())


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 3  # a character cut at the sample's end
    return True
