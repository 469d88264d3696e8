"""Making user and agent text safe for Slack mrkdwn, and fitting Block Kit limits."""

from __future__ import annotations

import re

SECTION_LIMIT = 3000
MAX_BLOCKS = 50
_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)


def escape(text: str) -> str:
    """Escape ``&``, ``<``, ``>`` (so no ``<!channel>`` or link can come from content) and
    defuse bare ``@channel``/``@here``/``@everyone`` with a zero-width joiner."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub(lambda m: "@\u2060" + m.group(1), text)


def truncate(text: str, limit: int = SECTION_LIMIT, pointer: str = "") -> str:
    """``text`` cut to ``limit`` characters, ending with a note saying where the rest is."""
    if len(text) <= limit:
        return text
    note = f"… (truncated{'; ' + pointer if pointer else ''})"
    cut = text[: limit - len(note)]
    # Do not leave half an escape sequence such as "&am".
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + note


def split(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, preferring line breaks."""
    pieces: list[str] = []
    while len(text) > limit:
        at = text.rfind("\n", 0, limit)
        at = at if at > limit // 2 else limit
        pieces.append(text[:at])
        text = text[at:].lstrip("\n")
    if text or not pieces:
        pieces.append(text)
    return pieces


def plain(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (for plain-text fields)."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
