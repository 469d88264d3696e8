"""Firing schedules, from the background loop of every worker process
(``core.process.background``): each due slot is fired by exactly one process (a claim
per schedule and slot, ``SET NX``), as a new run in the schedule's channel.

- Unchanged (the cohort and budget people last approved): the run starts at once.
- Changed, or a task never approved yet: the run is proposed and waits for approval
  (the normal card). Once a person approves a firing's run, its cohort and budget are
  the approved ones from the next firing on.
- Missed slots (no process ran): made up once on recovery, then the next slot after now.
- Overlap: while the last firing's run has not ended, a due slot is skipped (``skip``)
  or waits until it ends (``queue``).

Every firing is appended to the firings stream the chat bots read
(:func:`read_firings`), which post it in the channel (``bots.chat.schedules``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from core.runs.control import approve_run, propose_run
from core.runs.requests import request_run
from core.runs.schedules import cohort_json, store
from core.schedules.clock import SYSTEM_CLOCK, Clock
from core.schedules.rules import next_after
from core.types.events import RunStatusChanged
from core.types.run import SYSTEM, RunBudget, RunState, RunStatus
from core.types.schedules import Firing, Schedule, fingerprint

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)


async def fire_due(svc: Services, clock: Clock = SYSTEM_CLOCK) -> int:
    """Fire the schedules due by ``clock.now()``, at most ``[schedules] max_per_tick``
    of them, the longest due first; how many this process fired. Those that did not
    fire (a queued one whose run still runs, one another process fires, one that
    failed) go behind the others, so the next ticks reach every due schedule in turn."""
    now, states = clock.now(), store(svc)
    fired, waiting = 0, []
    for schedule_id in await states.due(now, svc.settings.schedules.max_per_tick):
        try:
            done = await fire_one(svc, schedule_id, now)
        except Exception:
            log.exception("firing schedule %s failed", schedule_id)
            done = False
        fired += done
        if not done:
            waiting.append(schedule_id)
    await states.behind(waiting, now)
    return fired


async def _running(svc: Services, run_id: str | None) -> bool:
    if run_id is None:
        return False
    try:
        return not (await svc.store.get_run(run_id)).status.terminal
    except Exception:
        return False


def _approved_by_people(run: RunState) -> bool:
    return any(t.to_status is RunStatus.APPROVED and t.by != SYSTEM for t in run.history)


async def fire_one(svc: Services, schedule_id: str, now: float) -> bool:
    """Fire the schedule's due slot if this process claims it; whether it fired."""
    states, settings = store(svc), svc.settings.schedules
    s = await states.get(schedule_id)
    if s is None or s.paused or s.next_at > now:
        return False
    slot = int(s.next_at)
    if await _running(svc, s.last_run_id):
        if s.overlap == "queue":
            return False  # due again at the next tick, fired once the run has ended
        if await states.claim(s.id, slot, settings.claim_ttl_s):
            log.info("schedule %s: slot %d skipped, its last run still runs", s.id, slot)
            await states.update(s.id, lambda c: _advanced(c, slot, now))
        return False
    if not await states.claim(s.id, slot, settings.claim_ttl_s):
        return False  # another process fires this slot
    # Advanced first: a crash after this loses one firing, never fires it twice.
    advanced = await states.update(s.id, lambda c: _advanced(c, slot, now))
    if advanced is None:
        return False  # deleted or paused meanwhile
    s = await _adopt(svc, advanced)
    run_id, asks = await _start(svc, s)
    saved = await states.update(
        s.id,
        lambda c: c.model_copy(
            update={
                "last_run_id": run_id,
                "last_fired_at": now,
                "firings": c.firings + 1,
                "from_run": s.from_run,
                "approved": s.approved,
            }
        ),
    )
    firing = Firing(
        schedule_id=s.id,
        run_id=run_id,
        place=s.place,
        words=s.rule.words,
        task=s.task,
        owner_name=s.owner_name,
        asks=asks,
        at=now,
    )
    await states.announce(firing, settings.firings_maxlen)
    log.info("schedule %s fired run %s (asks: %s, kept: %s)", s.id, run_id, asks, bool(saved))
    return True


def _advanced(s: Schedule, slot: int, now: float) -> Schedule | None:
    """The schedule with its next slot after ``now`` (missed slots made up once); None
    if paused meanwhile or another process moved it on already."""
    if s.paused or int(s.next_at) != slot:
        return None
    return s.model_copy(update={"next_at": next_after(s.rule, now)})


async def _adopt(svc: Services, s: Schedule) -> Schedule:
    """A firing's run that people approved becomes what the schedule runs from now on."""
    if s.last_run_id is None or s.last_run_id == s.from_run:
        return s
    try:
        last = await svc.store.get_run(s.last_run_id)
    except Exception:
        return s
    if not _approved_by_people(last) or last.root is None:
        return s
    # People approved the cap the run had: it covers the schedule's budget if as high
    # (a first firing's planned budget may be lower: then the next firing asks again).
    budget = last.budget.cost_usd if last.budget is not None else 0.0
    covered = s.budget_usd if budget >= s.budget_usd else budget
    approved = fingerprint(cohort_json(last), s.task, covered)
    return s.model_copy(update={"from_run": last.id, "approved": approved})


async def _start(svc: Services, s: Schedule) -> tuple[str, bool]:
    """The firing's run: started at once when unchanged, else proposed; (id, asks)."""
    if s.from_run is None:  # a task never approved: planned, then the card
        return await request_run(svc, s.task, requested_by=s.owner, place=s.place), True
    source = await svc.store.get_run(s.from_run)
    assert source.root is not None, "a schedule's run keeps its agents"
    limits = svc.settings.limits
    budget = RunBudget(
        tokens=limits.tokens_per_run, cost_usd=s.budget_usd, wall_clock_s=limits.wall_clock_s
    )
    team = source.cohort.model_copy(update={"task": s.task}) if source.cohort else source.root
    run_id = await propose_run(
        svc, s.task, team, requested_by=s.owner, budget=budget, place=s.place
    )
    asks = fingerprint(cohort_json(source), s.task, s.budget_usd) != s.approved
    if asks:  # the card, as a planned proposal shows it
        note = "scheduled: the cohort or its budget changed since people approved it"
        await svc.store.emit(
            RunStatusChanged(run_id=run_id, status=RunStatus.PROPOSED, by=SYSTEM, note=note)
        )
    else:
        step = await approve_run(svc, run_id, SYSTEM)
        if not step.ok:
            log.warning("schedule %s: run %s did not start: %s", s.id, run_id, step.reason)
    return run_id, asks


async def read_firings(
    svc: Services, after: str, *, count: int = 100, block_ms: int | None = None
) -> list[tuple[str, Firing]]:
    """Firings after stream id ``after`` (``"0-0"``: all kept), for a chat bot to post."""
    return await store(svc).firings(after, count, block_ms)


async def latest_firing(svc: Services) -> str:
    """The stream id of the latest firing (a bot starting fresh reads after it)."""
    return await store(svc).last_firing_id()
