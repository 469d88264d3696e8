"""What people decide about a run: propose, approve, reject, cancel, or start one at
once (budgets: ``core.runs.budget``, the one path every proposal's budget takes).

Every decision is one atomic transition of the run in Redis (``Store.transition_run`` /
``Store.update_run``), so two people clicking Approve at once start one run, and an
illegal step (approve after cancel) is refused with the reason instead of applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from core.agent.create import require_known_tools, spawn_cohort
from core.agent.wake import nudge_all
from core.effects.timers import ExpireProposal, schedule, unschedule
from core.errors import RunError
from core.runs import spend
from core.runs.budget import default_budget, proposal_budget
from core.services import Services
from core.state.store import TransitionResult, transition
from core.types._base import new_id
from core.types.agent import AgentSpec
from core.types.cohort import Cohort
from core.types.events import RunEvent, RunFinished, RunStarted
from core.types.place import Place
from core.types.run import SYSTEM, RunBudget, RunState, RunStatus


async def propose_run(
    svc: Services,
    task: str,
    root: AgentSpec | Cohort,
    *,
    requested_by: str,
    budget: RunBudget | None = None,
    place: Place | None = None,
) -> str:
    """Record a proposed run — one top agent, or a designed cohort — that nothing runs
    until someone approves it (``approval.expire_s`` to decide); returns its id. It gets
    ``budget`` if given, else the budget every proposal gets
    (``core.runs.budget.proposal_budget``: a cohort's as its planner designed it).
    ``place``: where it was asked (its cost is counted there: ``core.runs.spend``)."""
    run = _proposal(svc, task, root, requested_by, budget, place)
    await svc.store.create_run(run)
    await spend.open_run(svc, run)  # counted in the spend ledger once it ends
    await schedule_expiry(svc, run)
    return run.id


def _proposal(
    svc: Services,
    task: str,
    root: AgentSpec | Cohort,
    requested_by: str,
    budget: RunBudget | None,
    place: Place | None,
) -> RunState:
    cohort = root if isinstance(root, Cohort) else None
    top = root.root if isinstance(root, Cohort) else root
    for spec in cohort.agents if cohort else (top,):
        require_known_tools(svc, spec)
    return RunState(
        id=new_id("run"),
        task=task,
        requested_by=requested_by,
        root_agent_id=top.id,
        root=top,
        cohort=cohort,
        budget=budget or proposal_budget(svc, cohort),
        expires_at=time.time() + svc.settings.approval.expire_s,
        place=place,
    )


def _expiry(run_id: str) -> ExpireProposal:
    # One per run, with a fixed id: a decision takes it back.
    return ExpireProposal(id=f"exp-{run_id}", run_id=run_id)


async def schedule_expiry(svc: Services, run: RunState) -> None:
    """A proposal still undecided at its ``expires_at`` is cancelled then."""
    if run.expires_at is not None:
        await schedule(svc, _expiry(run.id), run.expires_at)


async def _decided(svc: Services, run_id: str) -> None:
    """The proposal was decided: its expiry timer has nothing left to do."""
    await unschedule(svc, _expiry(run_id))


_EXPIRED = "the proposal expired before anyone approved it"
# Refuses a decision about the run as it is now (who may decide, its status), or None.
Guard = Callable[[RunState], str | None]


def _expired(run: RunState, now: float) -> bool:
    return run.status is RunStatus.PROPOSED and run.expires_at is not None and now >= run.expires_at


def _expire(run: RunState) -> tuple[RunState, list[RunEvent]]:
    step = transition(run, RunStatus.CANCELLED, by=SYSTEM, note=_EXPIRED)
    return step.run, [RunFinished(run_id=run.id, status=RunStatus.CANCELLED, error=_EXPIRED)]


async def expire_if_due(svc: Services, run_id: str) -> TransitionResult | None:
    """Cancel the run if it is a proposal past its ``expires_at``; the step taken, if any."""
    now = time.time()
    outcome: list[TransitionResult] = []

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if not _expired(run, now):
            return None, []
        new, events = _expire(run)
        outcome[:] = [TransitionResult(True, new)]
        return new, events

    await svc.store.update_run(run_id, change)
    return outcome[0] if outcome else None


async def approve_run(
    svc: Services, run_id: str, by: str, *, guard: Guard | None = None
) -> TransitionResult:
    """Approve and start a proposed run, in one atomic step on the run as it is (``guard``
    may refuse it first: who may decide). Of concurrent approvals exactly one starts it;
    the others get ``ok=False`` with the reason. A proposal past its expiry is cancelled
    instead."""
    now = time.time()
    outcome: list[TransitionResult] = []

    def begin(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        refusal = guard(run) if guard is not None else None
        if refusal is not None:
            outcome[:] = [TransitionResult(False, run, refusal)]
            return None, []
        if _expired(run, now):
            new, events = _expire(run)
            reason = f"{_EXPIRED}; ask again for a fresh proposal"
            outcome[:] = [TransitionResult(False, new, reason)]
            return new, events
        started = _start(svc, run, by, now)
        outcome[:] = [started]
        if not started.ok:
            return None, []
        return started.run, [RunStarted(run_id=run.id, task=run.task)]

    # A person's decision: on the replicas wanted before the run starts (a failover
    # must not lose it: redis.replicas_to_ack).
    await svc.store.update_run(run_id, begin, durable=True)
    result = outcome[0]
    if result.ok or result.run.status is RunStatus.CANCELLED:
        await _decided(svc, run_id)
    if not result.ok:
        return result
    await _spawn(svc, result.run)
    return result


def _start(svc: Services, run: RunState, by: str, now: float) -> TransitionResult:
    """A proposal approved by ``by`` and started at ``now`` (in memory), or why not."""
    approved = transition(run, RunStatus.APPROVED, by=by)
    started = transition(approved.run, RunStatus.RUNNING, by=by) if approved.ok else approved
    if started.ok:
        new = started.run
        new.budget = budget = run.budget or default_budget(svc)
        new.started_at = now
        new.deadline_at = now + budget.wall_clock_s
    return started


async def _spawn(svc: Services, started: RunState) -> None:
    """Create and start the agents of a run just started."""
    assert started.root is not None, "a proposed run keeps its root agent"
    # A single top agent is a cohort of one.
    cohort = started.cohort or Cohort(task=started.task, agents=(started.root,))
    await spawn_cohort(
        svc, started.id, cohort, started.task, started.requested_by, files=started.files
    )


async def reject_run(
    svc: Services, run_id: str, by: str, reason: str = "", *, guard: Guard | None = None
) -> TransitionResult:
    """Reject a proposal, in one atomic step (``guard`` may refuse it first)."""
    outcome: list[TransitionResult] = []

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        refusal = guard(run) if guard is not None else None
        step = (
            TransitionResult(False, run, refusal)
            if refusal is not None
            else transition(run, RunStatus.REJECTED, by=by, note=reason)
        )
        outcome[:] = [step]
        if not step.ok:
            return None, []
        error = reason or None
        return step.run, [RunFinished(run_id=run_id, status=RunStatus.REJECTED, error=error)]

    await svc.store.update_run(run_id, change, durable=True)
    if outcome[0].ok:
        await _decided(svc, run_id)
    return outcome[0]


async def cancel_run(
    svc: Services, run_id: str, by: str, reason: str = "", *, name: str | None = None
) -> TransitionResult:
    """Cancel a run: refused if it already ended. Every agent stops within one turn.
    ``name``: how people read ``by`` (the run's end says who cancelled it)."""
    error = f"cancelled by {name or by}" + (f": {reason}" if reason else "")
    step = await end_run(svc, run_id, RunStatus.CANCELLED, by=by, note=reason, error=error)
    if step.ok:
        await _decided(svc, run_id)
    return step


async def end_run(
    svc: Services, run_id: str, to: RunStatus, *, by: str, note: str, error: str
) -> TransitionResult:
    """End a run that has not ended (cancelled, or failed for ``error``) with what it
    spent; every agent still at work stops at its next turn."""
    usage = await svc.store.run_usage(run_id)
    finished = RunFinished(
        run_id=run_id,
        status=to,
        error=error,
        tokens=usage.total_tokens,
        cost_usd=usage.cost_usd,
    )
    step = await svc.store.transition_run(run_id, to, by=by, note=note, events=[finished])
    if step.ok:
        await nudge_all(svc, run_id)
    return step


async def start_run(
    svc: Services,
    task: str,
    root: AgentSpec,
    *,
    requested_by: str = "console",
    approved_by: str | None = None,
) -> str:
    """Create a run for ``task`` with ``root`` as its top agent and start it.

    Without a planner in front, the requester's own request counts as the approval: the
    run is recorded already approved and running (its history and events as a proposal
    approved at once would have them), with no proposal to expire nor decision to wait
    for — one write, on the replicas wanted (``redis.replicas_to_ack``) like a decision.
    """
    run = _proposal(svc, task, root, requested_by, None, None)
    step = _start(svc, run, approved_by or requested_by, time.time())
    if not step.ok:
        raise RunError(step.reason)
    started = [RunStarted(run_id=run.id, task=run.task)]
    await svc.store.create_run(step.run, started, durable=True)
    await spend.open_run(svc, step.run)  # counted in the spend ledger once it ends
    await _spawn(svc, step.run)
    return run.id
