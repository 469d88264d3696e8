"""Posting schedules' firings into a chat platform, the same on every platform: each
firing (``core.runs.firings``) of a schedule whose place is on this platform opens a new
top-level message in its channel ("Scheduled run (every weekday at 9:00): …"), and the
run is threaded there exactly as a mention's is (``Relays.open``: the card when it asks
for approval, progress, the result).

Of several bot processes of one platform exactly one posts each firing (a mark per
firing, ``Threads.first_time``). A process reads the firings of the last
``LOOKBACK_S`` when it starts, so a firing made while every bot was down is still posted.

    delivery = FiringDelivery(relays)        # bots.chat.relays.Relays of the platform
    delivery.start()                         # a task reading the firings stream
    ...
    await delivery.aclose()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from bots.chat.ports import Place
from bots.chat.relays import Relays
from core.runs.firings import read_firings
from core.types.schedules import Firing

log = logging.getLogger(__name__)
LOOKBACK_S = 3600
# How long one read of the stream waits for a firing (a blocking read on real Redis).
BLOCK_MS = 1000
# How often a process without blocking reads (embedded mode) looks for firings.
POLL_S = 0.5


def announcement(relays: Relays, firing: Firing) -> str:
    """The top-level message that opens a firing's thread, in the platform's markup."""
    r = relays.adapter.renderer
    how = "it waits for approval: its cohort or budget changed" if firing.asks else "running now"
    return (
        f"Scheduled run ({r.escape(firing.words)}) by {r.bold(firing.owner_name)}: "
        f"{r.escape(firing.task)} — {how}."
    )


class FiringDelivery:
    """Reads the firings stream in this bot process and posts this platform's."""

    def __init__(self, relays: Relays, *, block_ms: int | None = BLOCK_MS) -> None:
        self.relays, self.block_ms = relays, block_ms
        self.after = f"{int((time.time() - LOOKBACK_S) * 1000)}-0"
        self.task: asyncio.Task[None] | None = None

    @property
    def blocking(self) -> bool:
        """Whether a read waits for a firing (real Redis), else the loop polls."""
        return self.block_ms is not None and not self.relays.svc.settings.redis.embedded

    async def mine(self, entry_id: str, firing: Firing) -> bool:
        """Whether this process posts ``firing``: it is this platform's and no other
        process posted it."""
        if firing.place.platform != self.relays.adapter.platform:
            return False
        return await self.relays.threads.first_time(f"firing:{entry_id}")

    async def deliver(self, entry_id: str, firing: Firing) -> bool:
        """Post ``firing`` (stream entry ``entry_id``) as a new top-level message and
        relay its run in that message's thread; whether this process did. A platform
        whose threads are opened differently (Discord, the web chat) overrides it."""
        if not await self.mine(entry_id, firing):
            return False
        relays = self.relays
        channel = Place(channel=firing.place.channel, thread="")
        posted = await relays.adapter.transport.post(channel, announcement(relays, firing), None)
        return await relays.open(firing.run_id, Place(channel=firing.place.channel, thread=posted))

    async def once(self) -> int:
        """Post the firings that came since the last read; how many this process posted."""
        block = self.block_ms if self.blocking else None
        read = read_firings(self.relays.svc, self.after, block_ms=block)
        # A non-blocking read (embedded mode, fakeredis) is shielded: cancelled inside
        # fakeredis it never returned, and the bot's close hung.
        got = await (read if self.blocking else asyncio.shield(read))
        posted = 0
        for entry_id, firing in got:
            try:
                posted += await self.deliver(entry_id, firing)
            except Exception:
                log.exception("could not post the firing of schedule %s", firing.schedule_id)
            self.after = entry_id
        return posted

    async def _loop(self) -> None:
        while True:
            try:
                if not await self.once() and not self.blocking:
                    await asyncio.sleep(POLL_S)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading schedules' firings failed; trying again")
                await asyncio.sleep(1.0)

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._loop(), name="schedule-firings")

    async def aclose(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None
