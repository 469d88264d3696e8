"""Schedules' firings in the web chat: each firing of a web chat schedule is a new chat
(its own page, ``/chat/<run>``, at the top of the past chats) that opens with a line
saying which schedule fired, then shows the run as a request's is (the card when it asks
for approval, progress, the result).

The shared reading of the firings stream (one process posts each firing, the last hour
read again on start) is ``bots.chat.schedules``; the web chat's own part is that its
threads are named by their run, so a firing's thread is its run's, not one under a
posted message."""

from __future__ import annotations

import asyncio
import logging

from bots.chat.ports import Place
from bots.chat.schedules import FiringDelivery
from core.runs.firings import read_firings
from core.types.schedules import Firing

log = logging.getLogger(__name__)


def announcement(firing: Firing) -> str:
    """The firing's first line in its chat (plain words: the page escapes them)."""
    how = "it waits for approval: its team or budget changed" if firing.asks else "running now"
    return f"Scheduled run ({firing.words}) by {firing.owner_name}: {how}."


class WebFirings(FiringDelivery):
    """The firings of the web chat's schedules, each posted as a new chat."""

    async def deliver(self, entry_id: str, firing: Firing) -> bool:
        relays = self.relays
        if firing.place.platform != relays.adapter.platform:
            return False
        if not await relays.threads.first_time(f"firing:{entry_id}"):
            return False
        place = Place("web", firing.run_id)
        note = {"kind": "note", "level": "info"}
        await relays.adapter.transport.post(place, announcement(firing), note)
        return await relays.open(firing.run_id, place)

    async def once(self) -> int:
        """Post the firings that came since the last read; how many this process posted."""
        block = self.block_ms if self.blocking else None
        read = read_firings(self.relays.svc, self.after, block_ms=block)
        # A non-blocking read (embedded mode, fakeredis) is shielded: cancelled inside
        # fakeredis, it never returned and the bot's close hung.
        got = await (read if self.blocking else asyncio.shield(read))
        posted = 0
        for entry_id, firing in got:
            try:
                posted += await self.deliver(entry_id, firing)
            except Exception:
                log.exception("could not post the firing of schedule %s", firing.schedule_id)
            self.after = entry_id
        return posted
