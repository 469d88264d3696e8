"""Chat mentions in what agents wrote (``<@U123>``, ``<@!123>``, ``<@&456>``: Slack's and
Discord's markup for a person or a role), shown in the web chat as the name the people room
remembers for that id (``@Ana``), ``@someone`` for a person it never saw and ``@a role``
for a role — readable, and never a raw id."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MENTION = re.compile(r"<@([!&]?)([A-Za-z0-9]{2,40})>")


def mentioned(texts: Iterable[str]) -> list[str]:
    """The ids of the people the texts mention (roles left out)."""
    return list(dict.fromkeys(m[2] for t in texts for m in MENTION.finditer(t) if m[1] != "&"))


def named(text: str, names: Mapping[str, str]) -> str:
    """``text`` with every mention as ``@name``."""

    def one(m: re.Match[str]) -> str:
        if m[1] == "&":
            return "@a role"
        return "@" + names.get(m[2], "someone")

    return MENTION.sub(one, text)
