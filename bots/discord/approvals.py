"""Discord people as the people room (``core.runs.people``) takes them, and naming people
in refusals.

Besides core's rules (the requester, ``[approval] approvers``), a Discord user id in
``[discord] approvers`` or a member of a role in ``[discord] approver_roles`` (by id or
name) is an approver: the adapter says so on the ``Person`` (``approver=True``), core
decides. Discord's who port (:data:`WHO`) marks a person in core's text; :func:`named`
then shows them by the name they last had here (``Links.remember_name``), else as a
mention."""

from __future__ import annotations

import re

import discord

from bots.discord.links import Links
from bots.discord.text import escape
from core.config import DiscordSettings
from core.types.people import Person

# A person's id marked in core's text, replaced by their name once the text is escaped.
_MARKED = re.compile(r"\x00(\d{1,24})\x00")
_SAFE_MARKED = re.compile(r"\x01(\d{1,24})\x01")


def is_approver(settings: DiscordSettings, user: discord.abc.User) -> bool:
    """Whether ``user`` is an approver by ``[discord]``: named, or holds a named role."""
    if str(user.id) in settings.approvers:
        return True
    wanted = set(settings.approver_roles)
    roles = getattr(user, "roles", None) or []
    return any(str(r.id) in wanted or r.name in wanted for r in roles)


def mark(user_id: str) -> str:
    """How core's text names a person (see :func:`named`)."""
    return f"\x00{user_id}\x00"


class Marks:
    """Discord's who port: each person marked, for :func:`named` to show by name."""

    async def name(self, user_id: str) -> str:
        return mark(user_id)


WHO = Marks()


def person(settings: DiscordSettings, user: discord.abc.User) -> Person:
    """``user`` as the people room takes them: by display name, an approver if
    ``[discord]`` makes them one."""
    return Person(str(user.id), user.display_name, approver=is_approver(settings, user))


async def named(links: Links, text: str) -> str:
    """Core's ``text`` (people marked with :func:`mark`) escaped for Discord, each person
    shown by name (as they last asked something here), else as a mention: Discord shows
    it as their name, and it pings nobody."""
    ids = list(dict.fromkeys(_MARKED.findall(text)))
    names = await links.names(ids)
    safe = escape(text.replace("\x00", "\x01"))

    def name(m: re.Match[str]) -> str:
        user_id = m.group(1)
        return escape(names[user_id]) if user_id in names else f"<@{user_id}>"

    return _SAFE_MARKED.sub(name, safe)
