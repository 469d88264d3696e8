"""Tool arguments and results as people read them: JSON indented (objects and arrays;
anything else as written), and whether a text is long enough to fold away. Pure; the
templates escape what this returns."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bots.web.timing import seconds
from core.types.approvals import shown_arguments

# Longer than this (lines or characters) is folded behind its first line.
FOLD_LINES = 8
FOLD_CHARS = 400


def pretty(text: str | None) -> str:
    """``text`` indented when it is a JSON object or array, else as it is."""
    if not text:
        return ""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    if value in ({}, []):
        return stripped
    return json.dumps(value, indent=2, ensure_ascii=False)


def arguments(text: str | None) -> str:
    """A tool call's arguments indented, with what looks like a secret masked (as
    approvers are shown them)."""
    return pretty(shown_arguments(text or "", limit=1_000_000)) if text else ""


def long(text: str | None) -> bool:
    """Whether ``text`` is folded (shown by its first line until opened)."""
    return bool(text) and (len(text or "") > FOLD_CHARS or (text or "").count("\n") >= FOLD_LINES)


def headline(text: str | None, limit: int = 100) -> str:
    """``text`` in one line, shortened, for a folded block's summary: JSON compact,
    else its first line (saying how many lines there are)."""
    compact = _compact(text or "")
    if compact is not None:
        return compact if len(compact) <= limit else compact[: limit - 1] + "…"
    first = (text or "").strip().split("\n", 1)[0]
    lines = (text or "").strip().count("\n") + 1
    more = f" … ({lines} lines)" if lines > 1 else ""
    return (first if len(first) <= limit else first[: limit - 1] + "…") + more


def _compact(text: str) -> str | None:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.dumps(json.loads(stripped), ensure_ascii=False)
    except ValueError:
        return None


def filters() -> dict[str, Callable[..., Any]]:
    """The page's filters for texts and times (registered by ``bots.web.app``)."""
    return {
        "pretty": pretty,
        "arguments": arguments,
        "long": long,
        "headline": headline,
        "secs": seconds,
    }
