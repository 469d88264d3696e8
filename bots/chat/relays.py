"""The runs one bot process relays into a chat platform: a task per run (its relay and the courier
of its outbox), held by a lease so that of several bot processes exactly one relays each
run, resumed where an earlier process stopped, and taken over from a process that died.

A process that stops gracefully gives its leases up as it goes, so that another (or its
successor) takes the runs at its next adoption round (every second); one that dies holds
them until they lapse: the platform's ``relay_lease_s``, renewed every third of it, so a dead
process's runs move within the lease and a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterator

from bots.chat.busy import Busy, stop_if_cancelled
from bots.chat.follow import relay_run
from bots.chat.outbox import Outbox
from bots.chat.ports import Adapter, Place
from bots.chat.redraw import Redraws
from bots.chat.store import Lease
from bots.chat.threads import Shown, Threads
from core.runs.requests import give_up_if_stuck, stuck_after
from core.services import Services
from core.state.event_hub import EventHub
from core.types.run import RunStatus

log = logging.getLogger(__name__)
# How long a stopping bot waits for relays to finish posting the event at hand.
STOP_GRACE_S = 5.0
# How often a bot process looks for runs nobody relays (at most: a third of the lease if
# that is shorter). Cheap while every run is held: two small Redis reads.
ADOPT_EVERY_S = 1.0


class Relays:
    """Run id → the task relaying it into ``adapter``'s platform in this process
    (iterable, ``in``, ``len``); ``threads``: that platform's threads."""

    def __init__(self, svc: Services, adapter: Adapter, threads: Threads) -> None:
        self.svc, self.adapter, self.threads = svc, adapter, threads
        self.hub = EventHub(svc.store, blocking=not svc.settings.redis.embedded)
        self.outbox = Outbox(threads.store)
        self.tasks: dict[str, asyncio.Task[None]] = {}
        # Runs whose relay is posting an event right now (not stopped halfway).
        self.busy = Busy()
        # This process, as the holder of the leases on the runs it relays.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        # Messages redrawn after a click, each run's held by one process as its relay is.
        self.redraws = Redraws(self.outbox, adapter, self.owner)
        self.lease_s = adapter.limits.relay_lease_s
        self.supervisor: asyncio.Task[None] | None = None
        self._claiming: set[str] = set()
        # This process's lease on each run it relays (renewed by the supervisor).
        self.leases: dict[str, Lease] = {}
        self.closed = False

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.tasks

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.tasks))

    def __len__(self) -> int:
        return len(self.tasks)

    async def open(self, run_id: str, place: Place) -> bool:
        """Show ``run_id`` in ``place`` from now on: replies there reach it (the thread is
        linked to it), and its relay starts here (see :meth:`follow`)."""
        shown = Shown(run_id=run_id, channel=place.channel, thread=place.thread)
        await self.threads.link(shown)
        return await self.follow(shown)

    async def follow(self, shown: Shown) -> bool:
        """Relay ``shown.run_id`` into its thread until the run ends, unless this process
        relays it already or another holds it; whether this process took it."""
        run_id, threads, owner = shown.run_id, self.threads, self.owner
        if self.closed or run_id in self.tasks or run_id in self._claiming:
            return False
        self._claiming.add(run_id)  # before the await: adopt() may race a new mention
        try:
            lease = await threads.claim(run_id, owner, self.lease_s)
        finally:
            self._claiming.discard(run_id)
        if lease is None:
            return False
        self.leases[run_id] = lease

        async def relay() -> None:
            watchdog = asyncio.create_task(self.watch_planning(run_id))
            try:
                await relay_run(
                    self.svc, self.hub, threads, self.outbox, self.adapter, shown, self.busy
                )
            finally:
                watchdog.cancel()
                # The lease this relay holds now (taken again if it lapsed: ``_renew``).
                await threads.release(self.leases.pop(run_id, lease))

        task = asyncio.create_task(relay(), name=f"{self.adapter.platform}-relay-{run_id}")
        self.tasks[run_id] = task
        task.add_done_callback(lambda _t: self.tasks.pop(run_id, None))
        return True

    async def watch_planning(self, run_id: str) -> None:
        """A request no worker plans in time is failed with what to check (the relay
        then says so in the thread): without workers nothing else would ever answer."""
        try:
            run = await self.svc.store.get_run(run_id)
            if run.status is RunStatus.PLANNING:
                await asyncio.sleep(max(0.0, stuck_after(self.svc, run) - time.time()))
                await give_up_if_stuck(self.svc, run_id)
        except Exception:
            log.exception("watching the planning of %s failed", run_id)

    async def adopt(self) -> int:
        """Relay the runs no bot process relays (left by one that stopped or died, or a
        relay that failed), and deliver the redraws nobody delivers; how many runs this
        process took."""
        if self.closed:
            return 0
        await self.redraws.adopt()
        unheld = await self.threads.unheld(set(self.tasks) | self._claiming)
        return sum([await self.follow(shown) for shown in unheld])

    async def start(self) -> int:
        """Take up the runs earlier processes left, then keep this process's leases and
        adopt the runs of processes that die; returns how many runs were taken up."""
        taken = await self.adopt()
        if self.supervisor is None:
            name = f"{self.adapter.platform}-relays"
            self.supervisor = asyncio.create_task(self._supervise(), name=name)
        return taken

    async def _supervise(self) -> None:
        """Renew this process's leases every third of their time, and adopt the runs
        nobody holds at least every ``ADOPT_EVERY_S``: a run given up by a stopping
        process moves within that, a dead process's within a lease and that."""
        tick = min(self.lease_s / 3, ADOPT_EVERY_S)
        renewed = time.monotonic()
        while True:
            stop_if_cancelled()
            await asyncio.sleep(tick)
            try:
                if time.monotonic() - renewed >= self.lease_s / 3 - tick / 2:
                    renewed = time.monotonic()
                    await self._renew()
                await self.adopt()
            except Exception:
                log.exception("keeping the relays' leases failed; retrying")

    async def _renew(self) -> None:
        await self.redraws.renew()
        leases = dict(self.leases)
        for run_id in await self.threads.renew(leases):
            if self.leases.get(run_id) is not leases[run_id]:
                continue  # its relay ended meanwhile (and released the lease)
            # Lapsed (this process stalled past the lease): kept if nobody took the run
            # meanwhile. Stopping the relay would leave the run unrelayed until the next
            # adoption round, its posts waiting, and a post under way at the stop twice.
            again = await self.threads.claim(run_id, self.owner, self.lease_s)
            if again is not None and self.leases.get(run_id) is leases[run_id]:
                self.leases[run_id] = again
                log.info("run %s: its relay's lease lapsed and was taken again", run_id)
                continue
            log.warning("run %s is relayed by another bot process now", run_id)
            if task := self.tasks.get(run_id):
                task.cancel()

    async def wait(self, timeout_s: float | None = None) -> None:
        """Wait for every relay to end (their runs ended, their posts delivered), up to
        ``timeout_s``. A relay stopped halfway (its lease lapsed while this process
        stalled, or it failed) has not ended: it is taken up again at once, not at the
        next adoption round, and waited for too."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while await self.adopt() or self.tasks:
                    await asyncio.wait(list(self.tasks.values()))

    async def aclose(self) -> None:
        """Stop between two events (the next process resumes after the last queued, and
        delivers what is left in the outbox), giving the leases up: another process
        takes the runs over at once rather than when the leases lapse."""
        if self.closed:
            return
        self.closed = True
        await self.redraws.aclose()  # what is left stays queued for the next process
        if self.supervisor is not None:
            self.supervisor.cancel()
            await asyncio.gather(self.supervisor, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE_S):
                await self.busy.idle.wait()
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:  # each gives its lease up as it ends
            await asyncio.wait(tasks, timeout=STOP_GRACE_S)
        for run_id, lease in list(self.leases.items()):  # a relay that did not end (a bug)
            log.warning("the relay of %s did not stop; its lease is given up", run_id)
            await self.threads.release(lease)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE_S):
                await self.hub.aclose()
        if tasks:
            log.info("stopped relaying %d runs; their leases are given up", len(tasks))
