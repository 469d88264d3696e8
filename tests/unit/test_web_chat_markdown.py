"""The web chat's Markdown (bots/web/chat_markdown.py): what agents write is rendered,
never passed through as HTML, and links go to web addresses only."""

from __future__ import annotations

import pytest

from bots.web.chat_markdown import markdown, safe_link


def test_markdown_is_rendered() -> None:
    html = markdown("- Trains: €1068\n- Rooms: €2520\n\n**Total: €5568**")
    assert "<li>Trains: €1068</li>" in html
    assert "<strong>Total: €5568</strong>" in html


def test_a_table_is_rendered() -> None:
    html = markdown("| part | cost |\n|---|---|\n| rooms | €2520 |")
    assert "<table>" in html and "<td>rooms</td>" in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<b onclick=alert(1)>bold</b>",
        "<div>\n<script>alert(1)</script>\n</div>",
        "`<script>`",
    ],
)
def test_raw_html_is_shown_as_text(text: str) -> None:
    html = markdown(text)
    assert "<script" not in html and "<img" not in html and "<b " not in html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "link",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x](vbscript:msgbox)",
        "[x](/runs/run_1/files/budget.md)",
        "<javascript:alert(1)>",
    ],
)
def test_only_web_addresses_are_links(link: str) -> None:
    html = markdown(link)
    assert "<a " not in html
    assert "href" not in html


def test_a_web_link_opens_apart_without_referrer() -> None:
    html = markdown('[the doc](https://example.com/a?b=1&c="2")')
    assert 'href="https://example.com/a?b=1&amp;c=%222%22"' in html
    assert 'rel="noopener noreferrer nofollow"' in html and 'target="_blank"' in html


def test_images_are_not_loaded() -> None:
    assert "<img" not in markdown("![chart](https://example.com/chart.png)")


def test_safe_link() -> None:
    assert safe_link("https://a.example") and safe_link(" HTTP://a.example")
    assert not safe_link("mailto:a@b.c") and not safe_link("//evil.example")


def test_nothing_is_empty() -> None:
    assert markdown(None) == "" and markdown("") == ""
