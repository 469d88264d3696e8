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
same call (``Store.turn_start``; a copy polls it while the lease is held) — or, for the
agent's own next turn run next on a worker's chain, by the save of the turn before it,
which starts it (``core.state.turn_ahead``: no round trip of its own) — and released
by its save script (``AfterSave.lease``); a turn that ends without a save (dropped,
parked, or raised) releases it on its own. It is renewed only when the turn runs longer
than ``LEASE_S / 3``, all of it with one command, by one timer per event loop for all
the turns it runs (a turn only joins and leaves its set).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from dataclasses import dataclass

from core.scheduler.base import TurnJob
from core.services import Services
from core.state.leases import TurnLease
from core.state.records import TurnStart
from core.state.turn_ahead import AHEAD

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


def turn_lease(svc: Services, job: TurnJob) -> _TurnLease:
    """``async with turn_lease(svc, job) as held``: the lease with the turn's start while
    this delivery holds it, None if another delivery is working on it (alive) for longer
    than a lapse would take. Left, the lease's renewal stops and a lease the save did not
    release is released."""
    return _TurnLease(svc, job)


class _TurnLease:
    """:func:`turn_lease`'s context manager (a class: an async generator's context manager
    costs a generator, its loop hooks and a weak set's entry per turn)."""

    def __init__(self, svc: Services, job: TurnJob) -> None:
        self.svc, self.job = svc, job
        self.held: Held | None = None
        self.renew: _Renewal | None = None

    async def __aenter__(self) -> Held | None:
        svc, job = self.svc, self.job
        # Started by the save of the turn before it, on this worker's chain: its lease held
        # since then (``core.state.turn_ahead``), unless it waited too long.
        offer = AHEAD.get()
        ahead = offer.take(job.run_id, job.agent_id, job.seq) if offer is not None else None
        if ahead is not None:
            if ahead.fresh():
                return self._held(ahead.start, ahead.token, ahead.ms, ahead.at)
            await ahead.release()
        # The token says who holds it, for a person looking at Redis (32 hex digits).
        token, ms = os.urandom(16).hex(), int(LEASE_S * 1000)
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
            # A copy that waited for the holder leaves the follow-ups to it: its save
            # released the lease and it schedules them (should it die first, its own
            # delivery comes back, or the watchdog's): redoing them here would only
            # duplicate them.
            started = await start(False)
        if started is None:
            return None
        return self._held(started, token, ms)

    def _held(self, started: TurnStart, token: str, ms: int, since: float | None = None) -> Held:
        """The lease held since ``since`` (``time.monotonic()``; None: now)."""
        job = self.job
        held = Held(started, TurnLease(self.svc.store, job.run_id, job.agent_id, job.seq, token))
        held.released = not started.reply.current  # the start let a stale job's lease go
        if not held.released:
            self.held, self.renew = held, _Renewal(held, ms, since)
        return held

    async def __aexit__(self, *_exc: object) -> None:
        held, renew = self.held, self.renew
        if held is None or renew is None:
            return
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
    """Renews ``held`` every ``LEASE_S / 3`` until stopped or released. The turn joins its
    loop's :class:`_Renewals` (one timer for every turn the loop runs; most turns end
    before their first renewal); a task is made only when a renewal is due."""

    def __init__(self, held: Held, ms: int, since: float | None = None) -> None:
        self.held, self.ms = held, ms
        self.task: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        # the lease's start (``since``, a ``time.monotonic()``, if before now) or last renewal
        now = loop.time()
        self.last = now if since is None else now - max(0.0, time.monotonic() - since)
        self.renewals = _renewals(loop)
        self.renewals.add(self)

    async def _renew(self) -> None:
        try:
            await self.held.lease.renew(self.ms)
        except Exception as exc:
            log.warning(
                "renewing the turn lease %s failed (%s); retrying", self.held.lease.key, exc
            )
        finally:
            self.task = None

    def stop(self) -> None:
        self.renewals.remove(self)
        if self.task is not None:
            self.task.cancel()


class _Renewals:
    """The leases one event loop's turns hold, looked at every ``LEASE_S / 6`` while any
    is held: each is renewed once ``LEASE_S / 3`` passed since its start or its last
    renewal (so at most ``LEASE_S / 2`` after either, well before it lapses)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.live: dict[int, _Renewal] = {}
        self.timer: asyncio.TimerHandle | None = None

    def add(self, renewal: _Renewal) -> None:
        self.live[id(renewal)] = renewal
        if self.timer is None:
            self.timer = self.loop.call_later(LEASE_S / 6, self._tick)

    def remove(self, renewal: _Renewal) -> None:
        self.live.pop(id(renewal), None)

    def _tick(self) -> None:
        self.timer = None
        now, due = self.loop.time(), LEASE_S / 3
        for key, renewal in list(self.live.items()):
            if renewal.held.released:
                del self.live[key]
            elif renewal.task is None and now - renewal.last >= due:
                renewal.last = now
                name = f"turn-lease-{renewal.held.lease.key}"
                renewal.task = self.loop.create_task(renewal._renew(), name=name)
        if self.live:
            self.timer = self.loop.call_later(LEASE_S / 6, self._tick)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Renewals] = (
    weakref.WeakKeyDictionary()
)


def _renewals(loop: asyncio.AbstractEventLoop) -> _Renewals:
    try:
        found = _BY_LOOP.get(loop)
        if found is None:
            found = _BY_LOOP[loop] = _Renewals(loop)
    except TypeError:  # a loop with no weak references: a set for this turn alone
        found = _Renewals(loop)
    return found
