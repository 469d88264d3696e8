"""What agents and the result say, as the web chat shows it: their Markdown rendered by
markdown-it-py (CommonMark, with GitHub's tables and strikethrough) and kept safe — raw
HTML is never passed through (it shows as text), images are not loaded (their text
shows), and a link is a link only to an ``http``/``https`` address, opened in a new tab
without a referrer; any other link (``javascript:``, ``data:``, a path on this site)
stays text."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

_SCHEMES = ("http://", "https://")


def safe_link(url: str) -> bool:
    """Whether ``url`` may be a link: an absolute ``http``/``https`` address only."""
    return url.strip().lower().startswith(_SCHEMES)


def _link_open(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer nofollow")
    return renderer.renderToken(tokens, idx, options, env)


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # Images would load from anywhere (the page's CSP refuses them anyway): text instead.
    md.disable("image")
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


def markdown(text: Any) -> Markup:
    """``text`` (Markdown) as safe HTML for a page."""
    return Markup(_parser().render(str(text or "")))
