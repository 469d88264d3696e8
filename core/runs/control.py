"""What people decide about a run: propose, approve, reject, cancel, or start one at
once (budgets: ``core.runs.budget``).

Every decision is one atomic transition of the run in Redis (``Store.transition_run`` /
``Store.update_run``), so two people clicking Approve at once start one run, and an
illegal step (approve after cancel) is refused with the reason instead of applied.
"""

from __future__ import annotations

import time

from core.agent.create import require_known_tools, spawn_cohort
from core.agent.wake import nudge_all
from core.effects.timers import ExpireProposal, schedule, unschedule
from core.errors import RunError
from core.services import Services
from core.state.store import TransitionResult, transition
from core.types._base import new_id
from core.types.agent import AgentSpec
from core.types.cohort import Cohort
from core.types.events import RunEvent, RunFinished, RunStarted
from core.types.run import SYSTEM, RunBudget, RunState, RunStatus


def default_budget(svc: Services) -> RunBudget:
    limits = svc.settings.limits
    return RunBudget(
        tokens=limits.tokens_per_run,
        cost_usd=limits.cost_per_run_usd,
        wall_clock_s=limits.wall_clock_s,
    )


async def propose_run(
    svc: Services,
    task: str,
    root: AgentSpec | Cohort,
    *,
    requested_by: str,
    budget: RunBudget | None = None,
) -> str:
    """Record a proposed run — one top agent, or a designed cohort — that nothing runs
    until someone approves it (``approval.expire_s`` to decide); returns its id."""
    cohort = root if isinstance(root, Cohort) else None
    top = root.root if isinstance(root, Cohort) else root
    for spec in cohort.agents if cohort else (top,):
        require_known_tools(svc, spec)
    run = RunState(
        id=new_id("run"),
        task=task,
        requested_by=requested_by,
        root_agent_id=top.id,
        root=top,
        cohort=cohort,
        budget=budget or default_budget(svc),
        expires_at=time.time() + svc.settings.approval.expire_s,
    )
    await svc.store.create_run(run)
    await schedule_expiry(svc, run)
    return run.id


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


async def expire_if_due(svc: Services, run_id: str) -> TransitionResult | None:
    """Cancel the run if it is a proposal past its ``expires_at``; the step taken, if any."""
    current = await svc.store.get_run(run_id)
    if (
        current.status is not RunStatus.PROPOSED
        or current.expires_at is None
        or time.time() < current.expires_at
    ):
        return None
    note = "the proposal expired before anyone approved it"
    return await svc.store.transition_run(
        run_id,
        RunStatus.CANCELLED,
        by=SYSTEM,
        note=note,
        events=[RunFinished(run_id=run_id, status=RunStatus.CANCELLED, error=note)],
    )


async def approve_run(svc: Services, run_id: str, by: str) -> TransitionResult:
    """Approve and start a proposed run. Of concurrent approvals exactly one starts it;
    the others get ``ok=False`` with the reason."""
    expired = await expire_if_due(svc, run_id)
    if expired is not None and expired.ok:
        note = expired.run.history[-1].note
        return TransitionResult(False, expired.run, f"{note}; ask again for a fresh proposal")
    step = await svc.store.transition_run(run_id, RunStatus.APPROVED, by=by)
    if not step.ok:
        return step
    await _decided(svc, run_id)

    def begin(r: RunState) -> tuple[RunState | None, list[RunEvent]]:
        result = transition(r, RunStatus.RUNNING, by=by)
        if not result.ok:
            return None, []
        budget = r.budget or default_budget(svc)
        result.run.budget = budget
        result.run.started_at = time.time()
        result.run.deadline_at = result.run.started_at + budget.wall_clock_s
        return result.run, [RunStarted(run_id=r.id, task=r.task)]

    started = await svc.store.update_run(run_id, begin)
    if started is None:  # cancelled between the two steps
        run = await svc.store.get_run(run_id)
        return TransitionResult(False, run, f"run {run_id} is {run.status.value}")
    assert started.root is not None, "a proposed run keeps its root agent"
    # A single top agent is a cohort of one.
    cohort = started.cohort or Cohort(task=started.task, agents=(started.root,))
    await spawn_cohort(svc, run_id, cohort, started.task, started.requested_by)
    return TransitionResult(True, started)


async def reject_run(svc: Services, run_id: str, by: str, reason: str = "") -> TransitionResult:
    step = await svc.store.transition_run(
        run_id,
        RunStatus.REJECTED,
        by=by,
        note=reason,
        events=[RunFinished(run_id=run_id, status=RunStatus.REJECTED, error=reason or None)],
    )
    if step.ok:
        await _decided(svc, run_id)
    return step


async def cancel_run(svc: Services, run_id: str, by: str, reason: str = "") -> TransitionResult:
    """Cancel a run: refused if it already ended. Every agent stops within one turn."""
    usage = await svc.store.run_usage(run_id)
    step = await svc.store.transition_run(
        run_id,
        RunStatus.CANCELLED,
        by=by,
        note=reason,
        events=[
            RunFinished(
                run_id=run_id,
                status=RunStatus.CANCELLED,
                error=f"cancelled by {by}" + (f": {reason}" if reason else ""),
                tokens=usage.total_tokens,
                cost_usd=usage.cost_usd,
            )
        ],
    )
    if step.ok:
        await _decided(svc, run_id)
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

    Without a planner in front, the requester's own request counts as the approval.
    """
    run_id = await propose_run(svc, task, root, requested_by=requested_by)
    step = await approve_run(svc, run_id, approved_by or requested_by)
    if not step.ok:
        raise RunError(step.reason)
    return run_id
