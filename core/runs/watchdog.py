"""The run watchdog: no run stays ``running`` with nothing left that could move it on.

Every ``scheduler.watchdog_s`` one process (a claim per round) looks at the runs under
way. A running run (not paused, not waiting for a person) whose every unfinished agent
waits — none runnable, none with mail to read, no open question, no timer due for it —
has nothing left that can move it on. Found so twice in a row with no event between,
it is ended as failed, naming who waits, and every agent stops. A waiting agent that
has mail but no wake-up on its way is woken instead (a wake-up lost with a worker). One
whose wake-up is claimed while the run made no progress for the stall span and nobody
holds that turn's lease had its turn lost after the claim (a failover kept the save that
claimed it and lost the turn's publishing): the turn is submitted again, past the claim,
like a stalled one (the claim alone would hold it back for ``bus.wake_ttl_s``).

A running run whose ``ready``/``running`` agents made no progress — no event in the run
for ``scheduler.stall_periods`` × ``stall_period_s`` — while nobody holds their turn's
lease has lost those turns everywhere (broker, ledger, a killed chain): each is submitted
again (idempotent by seq: a duplicate is dropped by the turn's start check), at most once
per agent per that span. Such a run is never failed for it. A request still in
``planning`` that nobody is planning (no planning claim) past that span had its planning
job lost the same way: it is submitted again, until the chat's relay gives the request up
(``core.runs.requests.give_up_if_stuck``).
"""

from __future__ import annotations

import logging
import time

from core.agent.wake import wake_agent
from core.runs.control import end_run
from core.scheduler.base import TurnJob
from core.services import Services
from core.state.store import TransitionResult
from core.types.agent import AgentSpec, AgentStatus
from core.types.run import SYSTEM, RunStatus

log = logging.getLogger(__name__)
_BATCH = 500


async def watch(svc: Services) -> int:
    """One round, if this process claims it; how many runs were ended."""
    interval = svc.settings.scheduler.watchdog_s
    state = svc.store.watchdog
    if not await state.claim_round(int(interval * 1000)):
        return 0
    try:
        await replan_lost(svc)
    except Exception:
        log.exception("the watchdog could not look at the requests in planning")
    ended = 0
    for run_id in await state.active_runs(_BATCH):
        try:
            ended += await check(svc, run_id)
        except Exception:
            log.exception("the watchdog could not check run %s", run_id)
    return ended


async def check(svc: Services, run_id: str) -> bool:
    """Look at one run; True if it was ended because nothing could move it on."""
    state = svc.store.watchdog
    head = await svc.store.run_head(run_id)
    if head.status.terminal:
        await state.forget(run_id)
        return False
    idle = None
    if head.status is RunStatus.RUNNING and head.paused is None:
        idle = await _idle(svc, run_id)
    if idle is None:
        await state.clear_idle(run_id)
        return False
    if not await state.idle_again(run_id):  # ended only if still so next round, no event
        return False
    return (await _fail(svc, run_id, idle)).ok


async def _idle(svc: Services, run_id: str) -> str | None:
    """Why nothing can move the run on (who waits), or None if something can."""
    state = svc.store.watchdog
    rows = await state.agent_rows(run_id, await svc.store.agent_ids(run_id))
    waiting: list[tuple[AgentSpec, int]] = []
    runnable: list[tuple[AgentSpec, int]] = []
    other = False
    for fields in rows:
        if fields[0] is None:
            continue
        status = AgentStatus(fields[0])
        if status is AgentStatus.WAITING:
            waiting.append((AgentSpec.model_validate_json(fields[1]), int(fields[2] or 0)))
        elif status in (AgentStatus.READY, AgentStatus.RUNNING):
            runnable.append((AgentSpec.model_validate_json(fields[1]), int(fields[2] or 0)))
        elif not status.terminal:
            other = True  # waiting for a person, or being created
    if runnable:
        await _resubmit_stalled(svc, run_id, runnable)
    if runnable or other:
        return None
    if await state.has_questions(run_id):
        return None
    for spec, seq in waiting:
        if await svc.bus.has_unread(run_id, spec):
            # Mail to read (or being read by a turn under way): a wake-up, if none is on
            # its way; one claimed but lost is submitted again once the run stalled.
            if not await wake_agent(svc, run_id, spec.id):
                await _resubmit_stalled(svc, run_id, [(spec, seq)])
            return None
    if await state.has_timer(run_id):
        return None  # a reminder or a time-out will wake someone
    if not waiting:
        return "no agent is left to finish it"
    names = ", ".join(s.name for s, _ in waiting[:6]) + (" and others" if len(waiting) > 6 else "")
    return f"every agent still at work ({names}) waits for a message that no one will send"


async def _resubmit_stalled(
    svc: Services, run_id: str, runnable: list[tuple[AgentSpec, int]]
) -> int:
    """Submit again the turns of runnable agents (or of a waiting one whose claimed
    wake-up never came) that made no progress for the stall span and that nobody is
    running; how many were submitted."""
    state, settings = svc.store.watchdog, svc.settings.scheduler
    span_ms = int(settings.stall_periods * settings.stall_period_s * 1000)
    quiet_ms = await state.quiet_ms(run_id)
    if quiet_ms < span_ms:
        return 0
    held = await state.leases_held(run_id, [(spec.id, seq) for spec, seq in runnable])
    submitted = 0
    for (spec, seq), leased in zip(runnable, held, strict=True):
        if leased:
            continue  # a delivery is running it (a long model call, a slow tool)
        if not await state.mark_resubmitted(run_id, spec.id, str(seq), span_ms):
            continue
        log.warning(
            "run %s: agent %s made no progress for %.0f s and nobody is running its turn %d; "
            "submitting it again",
            run_id,
            spec.name,
            quiet_ms / 1000,
            seq,
        )
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=spec.id, seq=seq))
        submitted += 1
    return submitted


async def replan_lost(svc: Services) -> int:
    """Submit again the planning of requests still in ``planning`` past the stall span
    that nobody is planning; how many were submitted (a duplicate is dropped by the
    planning's claim and status checks)."""
    state, settings = svc.store.watchdog, svc.settings
    span_s = settings.scheduler.stall_periods * settings.scheduler.stall_period_s
    now = time.time()
    since = now - settings.planning.pickup_s - settings.planning.timeout_s
    submitted = 0
    for run_id, head, claimed in await state.planning_runs(since, now - span_s, _BATCH):
        if head is None or head.status is not RunStatus.PLANNING or claimed:
            continue
        if not await state.mark_resubmitted(run_id, "plan", "1", int(span_s * 1000)):
            continue
        log.warning("request %s: nobody is planning it; submitting its planning again", run_id)
        await svc.scheduler.submit(TurnJob(run_id=run_id, kind="plan"))
        submitted += 1
    return submitted


async def _fail(svc: Services, run_id: str, why: str) -> TransitionResult:
    error = f"the run could not go on: {why}"
    step = await end_run(svc, run_id, RunStatus.FAILED, by=SYSTEM, note=error, error=error)
    if step.ok:
        log.warning("run %s ended by the watchdog: %s", run_id, why)
    return step
