"""Where on Discord something happens, as core's :class:`~core.types.place.Place`: the
server and the channel, with their names; a thread counts as its parent channel (and is
kept in ``thread``); no server is a direct message (workspace ``dm``, a place core
refuses schedules in)."""

from __future__ import annotations

from typing import Any

import discord

from core.types.place import Place


def place_in(channel: Any, guild: discord.Guild | None, channel_id: int | None = None) -> Place:
    """The place of ``channel`` in ``guild`` (None: a direct message). ``channel_id``: the
    interaction's own, for a channel discord.py did not resolve."""
    thread = channel if isinstance(channel, discord.Thread) else None
    parent = thread.parent if thread is not None else channel
    where: Any = (thread.parent_id or thread.id) if thread is not None else None
    where = where or getattr(channel, "id", None) or channel_id or ""
    name = getattr(parent, "name", None) or getattr(channel, "name", None) or ""
    return Place(
        platform="discord",
        workspace=str(guild.id) if guild is not None else "dm",
        channel=str(where),
        workspace_name=guild.name if guild is not None else "",
        channel_name=f"#{name}" if name else "",
        thread=str(thread.id) if thread is not None else "",
    )
