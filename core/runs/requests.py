"""Chat requests: recorded at once, routed and planned by a worker.

A chat adapter acknowledges a mention, calls :func:`request_run` (one Redis write and one
job for the scheduler) and follows the run's events; planning — several model calls —
never runs in the adapter's process. The planning job (:func:`plan_request`, a
``TurnJob`` of kind ``plan``) ends the ``planning`` status one of three ways:

- the fast path: the UI agent starts at once (the request counts as the approval);
- a designed cohort: the run becomes ``proposed`` (a ``run_status`` event), and the
  adapter posts the card;
- an error: the run fails with the reason (a ``run_finished`` event).

A claim key keeps two deliveries of the job from planning at once; a delivery after the
planning ended is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import telemetry
from core.agent.responses import RememberingLLM
from core.errors import CarambaError
from core.planning import plan
from core.runs import spend
from core.runs.budget import proposal_budget
from core.runs.control import approve_run, schedule_expiry
from core.scheduler.base import TurnJob, TurnOutcome
from core.state import planning_claims
from core.state.store import transition
from core.types._base import new_id
from core.types.cohort import Cohort
from core.types.events import ErrorRaised, RunEvent, RunFinished, RunStatusChanged
from core.types.files import AttachedFile
from core.types.place import Place
from core.types.run import SYSTEM, RunState, RunStatus

if TYPE_CHECKING:
    from core.planning import PlanOutcome
    from core.services import Services

log = logging.getLogger(__name__)
# How long a planning worker's claim outlives its last renewal (it renews every third).
_CLAIM_S = 30
_INSTEAD = "one agent answers this request directly instead"


def new_run_id() -> str:
    """An id for a request not recorded yet: an adapter writes the files attached to it
    into the run's workspace under this id first, then calls :func:`request_run`."""
    return new_id("run")


async def request_run(
    svc: Services,
    task: str,
    *,
    requested_by: str,
    run_id: str | None = None,
    files: Sequence[AttachedFile] = (),
    place: Place | None = None,
) -> str:
    """Record ``task`` as a run in ``planning`` and hand its planning to the scheduler.

    The run has no budget until it is proposed: planning gives it the one its card shows
    and it runs with (``core.runs.budget.proposal_budget``).

    ``files`` were attached to the request and are in the workspace of ``run_id``
    already: the planner and the agents are told they exist. ``place``: where it was
    asked (the spend ledger's channel and workspace).
    """
    run = RunState(
        id=run_id or new_run_id(),
        task=task,
        status=RunStatus.PLANNING,
        requested_by=requested_by,
        files=list(files),
        place=place,
    )
    await svc.store.create_run(run)
    await spend.open_run(svc, run)
    await svc.scheduler.submit(TurnJob(run_id=run.id, kind="plan"))
    return run.id


async def plan_request(svc: Services, run_id: str) -> TurnOutcome:
    """Route and plan the request ``run_id``; safe to deliver twice."""
    # Claimed while this process plans (renewed): a dead worker's claim lapses within
    # _CLAIM_S, and a delivery after that finds the planning ended (the status tells) or
    # redoes it, reusing the answers the dead worker paid for.
    if not await planning_claims.claim(svc.store, run_id, _CLAIM_S):
        return TurnOutcome.DROPPED
    renewing = asyncio.create_task(_renew(svc, run_id), name=f"planning-claim-{run_id}")
    try:
        return await _plan(svc, run_id)
    finally:
        renewing.cancel()


async def _renew(svc: Services, run_id: str) -> None:
    while True:
        await asyncio.sleep(_CLAIM_S / 3)
        try:
            await planning_claims.renew(svc.store, run_id, _CLAIM_S)
        except Exception:
            log.warning("renewing the planning claim of %s failed; retrying", run_id)


async def _plan(svc: Services, run_id: str) -> TurnOutcome:
    timeout = svc.settings.planning.timeout_s
    run = await svc.store.get_run(run_id)
    if run.status is not RunStatus.PLANNING:
        return TurnOutcome.DROPPED
    if not await spend.gate(svc, run):  # over its budget: waits for the owner
        return TurnOutcome.ENDED
    # A delivery after a crash mid-planning reuses the answers the first one paid for.
    llm = RememberingLLM(svc.llm, svc, run_id)
    try:
        library = await svc.library() if svc.settings.planning.library_top_k else None
        async with asyncio.timeout(timeout):
            with telemetry.planning(run_id, run.traceparent):
                outcome = await plan(
                    svc.settings,
                    llm,
                    svc.tools,
                    run.task,
                    library=library,
                    prompts=svc.prompts,
                    files=run.files,
                )
    except (CarambaError, TimeoutError) as exc:
        reason = str(exc) if isinstance(exc, CarambaError) else f"took over {timeout:.0f} s"
        await _fail(svc, run_id, f"planning failed: {reason}")
        await llm.forget()
        return TurnOutcome.ENDED
    except Exception as exc:
        # Not retried: a request stuck in planning would never be answered.
        log.exception("planning %s crashed", run_id)
        await _fail(svc, run_id, f"planning crashed ({type(exc).__name__}: {exc})")
        await llm.forget()
        return TurnOutcome.ENDED
    await _propose(svc, run_id, outcome)
    await llm.forget()
    return TurnOutcome.ENDED


async def _propose(svc: Services, run_id: str, outcome: PlanOutcome) -> None:
    """Planning → proposed with the cohort (or the UI agent, then started at once), and
    with the budget every proposal gets (``core.runs.budget.proposal_budget``): a
    designed cohort's as its planner designed it, a direct answer's the default."""
    cohort: Cohort | None = outcome.cohort
    top = outcome.direct or (cohort.root if cohort is not None else None)
    assert top is not None, "planning returns a direct agent or a cohort"

    def propose(r: RunState) -> tuple[RunState | None, list[RunEvent]]:
        step = transition(r, RunStatus.PROPOSED, by=SYSTEM, note=outcome.decision.reason)
        if not step.ok:
            return None, []  # cancelled while planning
        new = step.run
        new.root, new.root_agent_id, new.cohort = top, top.id, cohort
        new.budget = proposal_budget(svc, cohort)
        new.planning = outcome.usage
        new.expires_at = time.time() + svc.settings.approval.expire_s
        note = f"{outcome.path}: {outcome.llm_calls} planning calls"
        events: list[RunEvent] = []
        if cohort is not None:
            events.append(
                RunStatusChanged(run_id=r.id, status=RunStatus.PROPOSED, by=SYSTEM, note=note)
            )
        elif outcome.note:  # the model could not design a team: said above the answer
            events.append(ErrorRaised(run_id=r.id, message=outcome.note, hint=_INSTEAD))
        return new, events

    proposed = await svc.store.update_run(run_id, propose)
    if proposed is None:
        return
    await spend.planned(svc, run_id, outcome.usage)  # for budget checks while it runs
    if cohort is not None:
        await schedule_expiry(svc, proposed)
        return
    step = await approve_run(svc, run_id, proposed.requested_by)
    if not step.ok:
        log.warning("the direct answer to %s did not start: %s", run_id, step.reason)


async def _fail(svc: Services, run_id: str, error: str) -> bool:
    step = await svc.store.transition_run(
        run_id,
        RunStatus.FAILED,
        by=SYSTEM,
        note=error,
        events=[RunFinished(run_id=run_id, status=RunStatus.FAILED, error=error)],
    )
    return step.ok


def stuck_after(svc: Services, run: RunState) -> float:
    """When a request still in ``planning`` is given up: planning's time-out plus the
    time a worker may take to start on it."""
    planning = svc.settings.planning
    return run.created_at + planning.pickup_s + planning.timeout_s


async def give_up_if_stuck(svc: Services, run_id: str) -> bool:
    """Fail a request no worker planned in time (none running, or all of them stuck);
    True if it was failed now. Called by whoever shows the request to people."""
    run = await svc.store.get_run(run_id)
    if run.status is not RunStatus.PLANNING or time.time() < stuck_after(svc, run):
        return False
    # Waiting for a spending decision (or planned again since one): not stuck.
    started = await spend.planning_from(svc, run)
    if started is None or time.time() < stuck_after(svc, run) - run.created_at + started:
        return False
    return await _fail(
        svc,
        run_id,
        "no worker planned this request in time: check that `caramba worker` is running "
        "(with the same redis.url), then ask again",
    )
