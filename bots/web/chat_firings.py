"""Schedules' firings in the web chat: each firing of a web chat schedule is a new chat
(its own page, ``/chat/<run>``, at the top of the past chats) that opens with a line
saying which schedule fired, then shows the run as a request's is (the card when it asks
for approval, progress, the result).

The shared reading of the firings stream (one process posts each firing, the last hour
read again on start) is ``bots.chat.schedules``; the web chat's own part is that its
threads are named by their run, so a firing's thread is its run's, not one under a
posted message."""

from __future__ import annotations

import logging

from bots.chat.ports import Place
from bots.chat.schedules import FiringDelivery
from core.types.schedules import Firing

log = logging.getLogger(__name__)


def announcement(firing: Firing) -> str:
    """The firing's first line in its chat (plain words: the page escapes them)."""
    how = "it waits for approval: its team or budget changed" if firing.asks else "running now"
    return f"Scheduled run ({firing.words}) by {firing.owner_name}: {how}."


class WebFirings(FiringDelivery):
    """The firings of the web chat's schedules, each posted as a new chat."""

    async def deliver(self, entry_id: str, firing: Firing) -> bool:
        if not await self.mine(entry_id, firing):
            return False
        relays = self.relays
        place = Place("web", firing.run_id)
        note = {"kind": "note", "level": "info"}
        await relays.adapter.transport.post(place, announcement(firing), note)
        return await relays.open(firing.run_id, place)
