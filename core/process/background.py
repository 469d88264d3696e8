"""The background loop every turn-running process runs beside its turns: due timers,
intents nobody has processed yet, ended runs to record in the library.

Quiet when idle: it ticks every ``scheduler.background_interval_s`` while ticks find
work, and every ``scheduler.background_idle_s`` once ``background_idle_ticks`` ticks in a
row found none (an idle process makes a few Redis round trips a second, not thirty).
Timers and schedules stay on time whatever the pace: the loop sleeps no later than the
soonest timer in the set or the soonest schedule's next slot, and a timer this process
schedules meanwhile wakes it (a timer or schedule made by a process with no loop of its
own, such as a chat bot's proposal expiry, is seen by the next tick).

Urgent first: timers, intents, the watchdog and due schedules run at every tick. The work
that can wait (recording ended runs in the library, folding their cost into the spend
ledger: tens of ms on the loop the turns share) is held back while this process runs
turns (:class:`Deferral`), done as soon as none runs, and after
``scheduler.background_defer_s`` anyway."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.agent.wake import wake_agent
from core.config_sections import SchedulerSettings
from core.effects.intents import process_pending
from core.effects.timers import TIMER, DeliverMessage, ExpireProposal, Timer
from core.runs import firings, spend, watchdog
from core.runs.control import expire_if_due
from core.runs.learning import learn_ended
from core.scheduler.base import TurnsHere
from core.services import Services
from core.state.client import Unreachable
from core.state.idle_probe import probe
from core.types.messages import HumanReply

log = logging.getLogger(__name__)
_BATCH = 100


@dataclass
class Deferral:
    """Holds back a tick's work that can wait while this process's turns run (a pass of
    tens of ms on their loop delays the deliveries beside it), at most ``limit_s`` from
    the first tick that held it back; never without ``turns`` or with ``limit_s`` 0."""

    limit_s: float
    turns: TurnsHere | None = None
    since: float | None = None  # when work was first held back (time.monotonic())

    def may_run(self) -> bool:
        if self.turns is None or self.limit_s <= 0 or not self.turns.running():
            return True
        return self.since is not None and time.monotonic() - self.since >= self.limit_s

    def held(self) -> None:
        if self.since is None:
            self.since = time.monotonic()

    def ran(self) -> None:
        self.since = None


async def tick(svc: Services, deferral: Deferral | None = None) -> tuple[bool, float | None]:
    """One pass: fire due timers, process intents nobody has processed yet, (every
    ``scheduler.watchdog_s``) end runs nothing can move on, fire due schedules, then
    record ended runs in the library and (every ``[governance] fold_every_s``) fold their
    cost into the spend ledger — these two unless ``deferral`` holds them back. A step is
    skipped when the tick's first look, ``core.state.idle_probe``, shows it would find
    nothing. Returns whether it did any of that (there may be more) and when the soonest
    timer (or schedule) left is due."""
    timers, now = svc.store.timers, time.time()
    # One round trip says which of these steps may find work (idle, they cost no more).
    looked = await probe(svc.store, now)
    soonest, fired = looked.soonest, 0
    if soonest is not None and soonest <= now:
        fired = await fire_due(svc, now)
        soonest = await timers.soonest()
    done = await process_pending(svc) if looked.intents else 0
    ended = await watchdog.watch(svc) if looked.watchdog else 0
    # Schedules due now: each slot fired by one process (core.runs.firings).
    scheduled = await firings.fire_due(svc) if looked.schedules_due else 0
    learned = folded = 0
    waiting = looked.learning or spend.fold_due(svc)
    held = waiting and deferral is not None and not deferral.may_run()
    if held and deferral is not None:
        deferral.held()
    else:
        learned = await learn_ended(svc) if looked.learning else 0
        # Ended runs' cost into the spend ledger, once each (every fold_every_s).
        folded = await spend.fold_ended(svc)
        if deferral is not None:
            deferral.ran()
    # Work held back keeps no quicker pace: the turns' end wakes the loop (run_background).
    busy = bool(fired or done or learned or ended or scheduled or folded)
    return busy, _earlier(soonest, looked.next_schedule)  # the loop wakes for either


async def fire_due(svc: Services, now: float | None = None) -> int:
    """Carry out every timer due by ``now``; returns how many this process fired."""
    timers = svc.store.timers
    fired = 0
    for raw in await timers.due(now if now is not None else time.time(), _BATCH):
        if not await timers.claim(raw):
            continue  # another process claimed it
        await _fire(svc, TIMER.validate_json(raw))
        fired += 1
    return fired


async def _fire(svc: Services, timer: Timer) -> None:
    if isinstance(timer, ExpireProposal):
        await expire_if_due(svc, timer.run_id)
        return
    if isinstance(timer, DeliverMessage):
        message = HumanReply(
            run_id=timer.run_id,
            sender=timer.author,
            recipient=timer.agent_id,
            body=timer.body,
            author=timer.author,
        )
        await svc.bus.deliver(timer.run_id, message)
    await wake_agent(svc, timer.run_id, timer.agent_id)


@dataclass
class Pace:
    """When the loop ticks next: soon while there is work, slowly when idle, never after
    the soonest timer known."""

    settings: SchedulerSettings
    empty_ticks: int = 0
    soonest: float | None = None  # the soonest timer's due time (time.time()), if any
    woken: asyncio.Event = field(default_factory=asyncio.Event)
    # The soonest timer this process added since the tick began (its read may predate it).
    added_since: float | None = None

    @property
    def interval(self) -> float:
        fast = self.settings.background_interval_s
        if self.empty_ticks < self.settings.background_idle_ticks:
            return fast
        # The watchdog's rounds (one process per watchdog_s) keep their period.
        return max(fast, min(self.settings.background_idle_s, self.settings.watchdog_s))

    def ticking(self) -> None:
        self.added_since = None

    def ticked(self, busy: bool, soonest: float | None) -> None:
        self.empty_ticks = 0 if busy else self.empty_ticks + 1
        self.soonest = _earlier(soonest, self.added_since)

    def added(self, at: float) -> None:
        """A timer this process scheduled (``TimerSet.watch``)."""
        self.added_since = _earlier(self.added_since, at)
        if self.soonest is None or at < self.soonest:
            self.soonest = at
            self.woken.set()

    async def sleep(self, stop: asyncio.Event) -> None:
        """Until the next tick is due (or ``stop`` is set)."""
        deadline = time.time() + self.interval
        while not stop.is_set():
            due = deadline if self.soonest is None else min(deadline, self.soonest)
            left = due - time.time()
            if left <= 0:
                return
            self.woken.clear()
            await _first_set(stop, self.woken, left)


def _earlier(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


async def _first_set(a: asyncio.Event, b: asyncio.Event, seconds: float) -> None:
    waiters = [asyncio.ensure_future(a.wait()), asyncio.ensure_future(b.wait())]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def run_background(
    svc: Services, stop: asyncio.Event, turns: TurnsHere | None = None
) -> None:
    """Tick until ``stop`` is set, at the :class:`Pace`; with ``turns`` (this process's),
    the work that can wait is held back while they run (:class:`Deferral`), and the loop
    ticks as soon as the last one ended.

    A failing tick is logged and retried on the next one: the loop never dies.
    """
    pace = Pace(svc.settings.scheduler)
    deferral = Deferral(svc.settings.scheduler.background_defer_s, turns)
    unwatch = svc.store.timers.watch(pace.added)
    unwatch_idle = turns.watch_idle(_wake_if_held(pace, deferral)) if turns else None
    try:
        while not stop.is_set():
            pace.ticking()
            try:
                pace.ticked(*await tick(svc, deferral))
            except asyncio.CancelledError:
                raise
            except Unreachable as exc:
                # Redis is restarting or unreachable: one line per tick, not a traceback.
                pace.ticked(False, pace.added_since)
                log.warning(
                    "background tick: Redis unreachable (%s); retry in %.1f s",
                    exc,
                    pace.interval,
                )
            except Exception:
                pace.ticked(False, pace.added_since)
                log.exception("background tick failed; retrying in %.1f s", pace.interval)
            await pace.sleep(stop)
    finally:
        unwatch()
        if unwatch_idle is not None:
            unwatch_idle()


def _wake_if_held(pace: Pace, deferral: Deferral) -> Callable[[], None]:
    """The turns went idle: tick now if work was held back for them (as for a timer due
    now, so a wake-up during a tick is not lost)."""

    def wake() -> None:
        if deferral.since is not None:
            pace.added(time.time())

    return wake
