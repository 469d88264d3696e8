"""One delivery of a turn at a time: the delivery that runs it holds a short lease,
renewed while it works.

A broker hands a turn out again when a worker dies — and also when the turn is merely
slow (a visibility timeout), when the ledger publishes again a turn it thinks lost, or
after a chain. Those copies are not failures: a copy that finds the lease held waits for
it to be released or to lapse (its holder died: a lapse takes at most ``LEASE_S``) and
then runs the turn, or finds it done; if the holder is alive and still working after
the wait, the copy is dropped (the holder's own message stays with the broker until it
ends, so nothing is lost if the holder dies later). Only deliveries that hold the lease
count towards the quarantine (``core.agent.quarantine``): the count is of attempts that
ended without a save, not of copies.

Round trips: the lease is taken by the turn's start script, which reads the turn in the
same call (``Store.turn_start``; a copy polls it while the lease is held), and released
by its save script (``AfterSave.lease``); a turn that ends without a save (dropped,
parked, or raised) releases it on its own. It is renewed only when the turn runs longer
than ``LEASE_S / 3``, all of it with one command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from core.scheduler.base import TurnJob
from core.services import Services
from core.state.leases import TurnLease
from core.state.records import TurnStart

log = logging.getLogger(__name__)
LEASE_S = 5.0
_POLL_S = 0.1


@dataclass
class Held:
    """The lease this delivery holds, and what the start script read with it."""

    start: TurnStart
    lease: TurnLease
    # Released by the save (or by the start, for a job that is not the current turn).
    released: bool = False

    @property
    def key_and_token(self) -> tuple[str, str]:
        return self.lease.key, self.lease.token


@contextlib.asynccontextmanager
async def turn_lease(svc: Services, job: TurnJob) -> AsyncIterator[Held | None]:
    """Yields the lease with the turn's start while this delivery holds it, None if
    another delivery is working on it (alive) for longer than a lapse would take."""
    # The token says who holds it, for a person looking at Redis.
    token, ms = uuid.uuid4().hex, int(LEASE_S * 1000)
    drain_max = svc.settings.bus.drain_max

    async def start(redo: bool) -> TurnStart | None:
        return await svc.store.turn_start(
            job.run_id, job.agent_id, job.seq, (token, ms), drain_max, redo=redo
        )

    started = await start(True)
    waited = 0.0
    while started is None and waited < LEASE_S + 1:
        await asyncio.sleep(_POLL_S)
        waited += _POLL_S
        # A copy that waited for the holder leaves the follow-ups to it: its save released
        # the lease and it schedules them (should it die first, its own delivery comes
        # back, or the watchdog's): redoing them here would only duplicate them.
        started = await start(False)
    if started is None:
        yield None
        return
    held = Held(started, TurnLease(svc.store, job.run_id, job.agent_id, job.seq, token))
    held.released = not started.reply.current  # the start let a stale job's lease go
    if held.released:
        yield held
        return
    renew = _Renewal(held, ms)
    try:
        yield held
    finally:
        renew.stop()
        if not held.released:
            # Only this delivery's own lease: one that lapsed and was taken stays taken.
            with contextlib.suppress(Exception):
                await held.lease.release()


async def unleased(svc: Services, job: TurnJob) -> Held:
    """The turn's start without its lease: a delivery that runs although another holds it
    (its lease lapsed under it; the save's compare-and-set on seq still applies the turn
    once)."""
    drain_max = svc.settings.bus.drain_max
    started = await svc.store.turn_start(job.run_id, job.agent_id, job.seq, ("", 0), drain_max)
    assert started is not None  # no lease asked for: never refused
    return Held(started, TurnLease(svc.store, job.run_id, job.agent_id, job.seq, ""), True)


class _Renewal:
    """Renews ``held`` every ``LEASE_S / 3`` until stopped or released: a timer on the
    loop, and a task only when one is due (most turns end before: no task per turn)."""

    def __init__(self, held: Held, ms: int) -> None:
        self.held, self.ms = held, ms
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[None] | None = None
        self.stopped = False
        self.timer = self.loop.call_later(LEASE_S / 3, self._due)

    def _due(self) -> None:
        if not (self.stopped or self.held.released):
            name = f"turn-lease-{self.held.lease.key}"
            self.task = self.loop.create_task(self._renew(), name=name)

    async def _renew(self) -> None:
        try:
            await self.held.lease.renew(self.ms)
        except Exception as exc:
            log.warning(
                "renewing the turn lease %s failed (%s); retrying", self.held.lease.key, exc
            )
        if not self.stopped:
            self.timer = self.loop.call_later(LEASE_S / 3, self._due)

    def stop(self) -> None:
        self.stopped = True
        self.timer.cancel()
        if self.task is not None:
            self.task.cancel()
