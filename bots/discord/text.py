"""Making user and agent text safe for Discord, and fitting Discord's limits."""

from __future__ import annotations

import re

import discord

# A message's content, at most (Discord refuses longer ones).
MESSAGE_LIMIT = 2000
# Every message the bot sends pings nobody: no @everyone/@here, roles or users.
NO_PINGS = discord.AllowedMentions.none()
_EVERYONE = re.compile(r"@(everyone|here)")


def escape(text: str) -> str:
    """``text`` shown as written: markdown escaped and @everyone/@here defused. A person's
    or a role's mention (``<@id>``, ``<@&id>``) is kept: Discord shows it as the name, and
    it pings nobody (every message is sent with :data:`NO_PINGS`)."""
    return _EVERYONE.sub("@\u200b\\1", discord.utils.escape_markdown(text))


def truncate(text: str, limit: int, pointer: str = "") -> str:
    """``text`` cut to ``limit`` characters, ending with a note saying so."""
    if len(text) <= limit:
        return text
    note = f"… (truncated{'; ' + pointer if pointer else ''})"
    cut = text[: max(0, limit - len(note))]
    # Not half an escape: a trailing backslash would escape the note's first character.
    return cut.rstrip("\\") + note


def split(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, preferring line breaks."""
    pieces: list[str] = []
    while len(text) > limit:
        at = text.rfind("\n", 0, limit)
        at = at if at > limit // 2 else limit
        if text[at - 1 : at] == "\\" and at > 1:  # keep an escape with what it escapes
            at -= 1
        pieces.append(text[:at])
        text = text[at:].lstrip("\n")
    if text or not pieces:
        pieces.append(text)
    return pieces
