"""What an agent reads of a fetched resource: HTML as readable text with its title,
text passed through, other types described, long text in pages."""

from __future__ import annotations

from core.tools.web.fetcher import Fetched
from core.tools.web.reader import describe_binary, kind_of, page_of, readable

PAGE = b"""<!DOCTYPE html><html><head><title>Otters of the Rhine</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a></nav>
<article><h1>Otters of the Rhine</h1>
<p>The Eurasian otter returned to the Rhine in 2019 after decades of absence, and the
survey counted three families near Basel.</p>
<h2>Diet</h2><p>Otters eat fish, crayfish and frogs; they hunt at night along the banks.</p>
</article><footer>Cookie settings</footer><script>track("visit")</script></body></html>"""


def _fetched(data: bytes, media: str, charset: str | None = None) -> Fetched:
    return Fetched("https://example.org/otters", 200, media, charset, data)


async def test_html_becomes_readable_text_with_its_title() -> None:
    text = await readable(_fetched(PAGE, "text/html", "utf-8"))
    assert text.title == "Otters of the Rhine"
    assert "returned to the Rhine in 2019" in text.text
    assert "## Diet" in text.text  # headings kept, as Markdown
    assert "track(" not in text.text and "Cookie settings" not in text.text


async def test_text_and_json_pass_through() -> None:
    body = '{"city": "Zürich", "n": 3}'.encode()
    assert (await readable(_fetched(body, "application/json"))).text == body.decode()
    latin = "café".encode("latin-1")
    assert (await readable(_fetched(latin, "text/plain", "latin-1"))).text == "café"


def test_kinds_by_type_and_by_sniffing() -> None:
    assert kind_of(_fetched(b"x", "application/xhtml+xml")) == "html"
    assert kind_of(_fetched(b"a,b\n1,2", "text/csv")) == "text"
    assert kind_of(_fetched(b"{}", "application/ld+json")) == "text"
    assert kind_of(_fetched(b"%PDF-1.7\x00\x01", "application/pdf")) == "binary"
    assert kind_of(_fetched(b"  <!DOCTYPE html><p>hi", "")) == "html"
    assert kind_of(_fetched(b"just words", "application/octet-stream")) == "text"
    assert kind_of(_fetched(b"\x89PNG\r\n\x1a\n\x00\x00", "")) == "binary"


def test_binary_is_described_with_what_to_do() -> None:
    said = describe_binary(_fetched(b"%PDF" + b"\x00" * 2048, "application/pdf"))
    assert "application/pdf (2.0 KB)" in said and "download(url, path)" in said


def test_pages_end_at_line_breaks_and_cover_everything() -> None:
    text = "".join(f"line {i:03d}\n" for i in range(100))  # 900 characters
    pages = []
    first, count = page_of(text, 200, 1)
    for n in range(1, count + 1):
        chunk, _ = page_of(text, 200, n)
        assert len(chunk) <= 200 and chunk.endswith("\n")
        pages.append(chunk)
    assert first == pages[0] and "".join(pages) == text and count == 5
    assert page_of(text, 200, 6) == ("", 5)
    assert page_of("", 200, 1) == ("", 1)
    assert page_of("x" * 450, 200, 3) == ("x" * 50, 3)  # no line break: cut at the size
