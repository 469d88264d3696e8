"""Text from people and agents made safe to print in a terminal.

Everything the console prints that came from outside (a task, agent names, prompts,
results, tool output, errors) goes through :func:`escape` when it is put into rich markup,
or :func:`printable` when rich is given it as plain text (``Text``, ``Markdown``). A
terminal acts on control bytes: an ESC from a web page an agent fetched could recolour the
screen, move the cursor, retitle the window or hide the lines around it. They are shown
as ``\\x1b`` instead; newlines and tabs stay.
"""

from __future__ import annotations

import re

from rich.markup import escape as _markup_escape

# C0 controls but tab and newline, DEL, C1 controls; and the bidirectional overrides and
# isolates, which reorder what is shown around them ("Trojan Source").
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\x1b"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written out visibly
    (ESC as ``\\x1b``); a Windows line end is a newline."""
    return _CONTROL.sub(_shown, text.replace("\r\n", "\n"))


def escape(text: str) -> str:
    """``text`` for rich markup: control characters written out (:func:`printable`) and
    anything rich would take for a tag (``[bold]``) escaped."""
    return _markup_escape(printable(text))
