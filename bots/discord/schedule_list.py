"""A channel's schedules as a Components V2 message: a heading, then each schedule's line
(when, its time zone, the budget per firing, the task, its owner, when it fires next;
escaped) with Pause or Resume, Edit and Delete under it. Within Discord's 40 components and
4,000 characters: long tasks are shortened, the schedules that do not fit are counted in
a last line."""

from __future__ import annotations

import time
from typing import Any

import discord

from bots.discord.schedule_items import EditScheduleButton, ScheduleButton
from bots.discord.text import escape, truncate
from core.types.schedules import Schedule

COMPONENTS_LIMIT = 40
TEXT_LIMIT = 4000
# Text kept for the heading and the "… and N more" line.
_ROOM_KEPT = 300
# The container, the heading and the "… and N more" line.
_FIXED = 3
# A schedule's text, its row and three buttons.
_PER_SCHEDULE = 5
SHOWN = (COMPONENTS_LIMIT - _FIXED) // _PER_SCHEDULE
ACCENT = 0x5865F2
NONE_YET = (
    "No schedules here yet. Make one with `/caramba-schedule action:add when:… task:…`, "
    "or press “Run this every…” under a finished run."
)


def line(s: Schedule, room: int = 1000) -> str:
    """A schedule as people read it, with its id (what the slash command takes), in at
    most ``room`` characters: the task is shortened first."""
    nxt = "paused" if s.paused else f"next {stamp(s.next_at)}"
    words = truncate(escape(s.rule.words), 120)
    head = f"**{words}** ({escape(s.rule.tz)}) · ${s.budget_usd:.2f} a firing"
    tail = f"-# by {escape(truncate(s.owner_name, 60))} · {nxt} · `{s.id}`"
    task = truncate(escape(" ".join(s.task.split())), max(20, room - len(head) - len(tail) - 2))
    return truncate(f"{head}\n{task}\n{tail}", room)


def list_view(schedules: tuple[Schedule, ...], channel_id: str) -> discord.ui.LayoutView:
    """The list of ``schedules`` of channel ``channel_id`` (shown by Discord as its name)."""
    container = discord.ui.Container[Any](accent_colour=ACCENT)
    n = len(schedules)
    where = f"<#{channel_id}>" if channel_id.isdigit() else "this channel"
    heading = f"### Schedules in {where}" + (f" ({n})" if n else "")
    container.add_item(discord.ui.TextDisplay[Any](heading))
    if not schedules:
        container.add_item(discord.ui.TextDisplay[Any](NONE_YET))
    room = (TEXT_LIMIT - _ROOM_KEPT) // max(1, min(n, SHOWN))
    for s in schedules[:SHOWN]:
        container.add_item(discord.ui.TextDisplay[Any](line(s, min(room, 1000))))
        toggle = ScheduleButton(s.id, "resume" if s.paused else "pause")
        row = discord.ui.ActionRow[Any](
            toggle, EditScheduleButton(s.id), ScheduleButton(s.id, "delete")
        )
        container.add_item(row)
    if n > SHOWN:
        more = f"… and {n - SHOWN} more (pause or delete them by id with the slash command)"
        container.add_item(discord.ui.TextDisplay[Any](more))
    view = discord.ui.LayoutView(timeout=None)
    view.add_item(container)
    return view


def stamp(at: float) -> str:
    """A time as Discord shows it in each reader's own zone."""
    return f"<t:{int(at or time.time())}:f>"
