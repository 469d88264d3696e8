"""What the bot's listener modules (decisions, edit, feedback, front) work with, handed
over by the bot (``bots.discord.bot``) so that they need not know it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import discord

from bots.chat.redraw import Redraws
from bots.chat.relays import Relays
from bots.discord.links import Links
from core.services import Services


@dataclass(frozen=True)
class DiscordContext:
    """One bot's parts: the discord.py ``client``, the core ``svc``, what it keeps in
    Redis (``links``), ``relays``: the chat layer's (``Relays.open`` shows a run in a
    thread from now on), ``run_in``: the run a thread shows, ``spawn`` to run work after an
    event was acknowledged (errors logged), and ``redraws``: a message redrawn after a
    click goes through them."""

    client: discord.Client
    svc: Services
    links: Links
    relays: Relays
    run_in: Callable[[discord.Thread], Awaitable[str | None]]
    spawn: Callable[[Coroutine[Any, Any, None]], None]
    redraws: Redraws
