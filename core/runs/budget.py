"""A run's budget: the one it is proposed with, what an edit of the proposal does to it,
and a paused run's extension by a person (the parked agents resume) or refusal (the run
ends with the results so far). Pausing at a limit is the turn's side
(``core.agent.limits``).

One path for every adapter: a run is proposed with :func:`proposal_budget` whoever
planned it (a chat request planned by a worker, ``core.runs.requests``, or the console's
``core.runs.control.propose_run``); the card shows ``run.budget`` and approval starts
the run with that same budget, so what people approve is what runs.
"""

from __future__ import annotations

import time

from core.agent.wake import nudge, nudge_all
from core.services import Services
from core.state import parking, questions
from core.state.store import TransitionResult, transition
from core.types.cohort import Cohort
from core.types.events import RunEvent, RunFinished, RunStatusChanged
from core.types.run import RunBudget, RunState, RunStatus


def default_budget(svc: Services) -> RunBudget:
    """The configured ceiling of a run (``[limits]``): a direct answer's budget."""
    limits = svc.settings.limits
    return RunBudget(
        tokens=limits.tokens_per_run,
        cost_usd=limits.cost_per_run_usd,
        wall_clock_s=limits.wall_clock_s,
    )


def planned_budget(svc: Services, cohort: Cohort) -> RunBudget:
    """The budget the planner designed for a cohort, within the configured caps.

    Tokens: its agents' token budgets added up (an agent without one counts the
    configured ``tokens_per_agent``, the most its turns may spend). Cost: its agents' cost
    budgets added up when every agent has one (a person set them all in an edit), else
    the cohort's ``budget_usd`` (the caps where it set none). The wall clock is the
    configured one.
    """
    limits = svc.settings.limits
    tokens = sum(a.budget.max_tokens or limits.tokens_per_agent for a in cohort.agents)
    costs = [a.budget.max_cost_usd for a in cohort.agents]
    if costs and all(c is not None for c in costs):
        cost = sum(c for c in costs if c is not None)
    else:
        cost = cohort.total_budget_usd if cohort.total_budget_usd > 0 else limits.cost_per_run_usd
    return RunBudget(
        tokens=max(1, min(limits.tokens_per_run, tokens)),
        cost_usd=min(limits.cost_per_run_usd, cost),
        wall_clock_s=limits.wall_clock_s,
    )


def proposal_budget(svc: Services, cohort: Cohort | None) -> RunBudget:
    """The budget a proposal is recorded, shown and run with: a designed cohort's
    :func:`planned_budget`; a single agent's (a direct answer) the configured
    :func:`default_budget`."""
    return planned_budget(svc, cohort) if cohort is not None else default_budget(svc)


def _agent_budgets(run: RunState) -> dict[str, tuple[int | None, float | None]]:
    agents = run.cohort.agents if run.cohort is not None else (run.root,) if run.root else ()
    return {a.id: (a.budget.max_tokens, a.budget.max_cost_usd) for a in agents}


def edited_budget(svc: Services, before: RunState, after: RunState) -> RunBudget | None:
    """The run's budget after an edit of its proposal, ``before`` → ``after``.

    An edit changes only what it edits: one that leaves every agent's token and cost
    budget as it was and adds or removes no agent (new instructions, tools, a model)
    keeps the run's budget exactly as the card showed it. One that changes an agent's
    budget, or adds or removes agents, gives a designed cohort its budget recomputed from
    the edited design (:func:`planned_budget`: a lead's budget raised by 25,000 tokens
    raises the run's by as much). A single agent's run keeps its budget. The budget to
    set, or None to keep it.
    """
    if after.cohort is None or _agent_budgets(before) == _agent_budgets(after):
        return None
    return planned_budget(svc, after.cohort)


async def extend_run(
    svc: Services,
    run_id: str,
    by: str,
    *,
    tokens: int | None = None,
    cost_usd: float | None = None,
    wall_clock_s: float | None = None,
) -> TransitionResult:
    """Raise a paused run's limits (defaults: [humans] in config) and resume it."""
    humans = svc.settings.humans
    add_tokens = humans.extend_tokens if tokens is None else tokens
    add_cost = humans.extend_cost_usd if cost_usd is None else cost_usd
    add_time = humans.extend_wall_clock_s if wall_clock_s is None else wall_clock_s
    outcome: list[TransitionResult] = []
    open_questions = await questions.count(svc.store, run_id)

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if not run.paused or run.status.terminal:
            outcome[:] = [TransitionResult(False, run, _not_paused(run))]
            return None, []
        budget = run.budget or default_budget(svc)
        new = run.model_copy(deep=True)
        events: list[RunEvent] = []
        if not open_questions:
            new = transition(run, RunStatus.RUNNING, by=by, note="budget extended").run
            events.append(RunStatusChanged(run_id=run.id, status=RunStatus.RUNNING, by=by))
        new.budget = RunBudget(
            tokens=budget.tokens + add_tokens,
            cost_usd=budget.cost_usd + add_cost,
            wall_clock_s=budget.wall_clock_s + add_time,
        )
        if new.deadline_at is not None:
            new.deadline_at = max(new.deadline_at, time.time()) + add_time
        new.paused = None
        outcome[:] = [TransitionResult(True, new)]
        return new, events

    await svc.store.update_run(run_id, change)
    if outcome[0].ok:
        await _resume_parked(svc, run_id)
    return outcome[0]


async def stop_run(
    svc: Services, run_id: str, by: str, *, name: str | None = None
) -> TransitionResult:
    """Refuse an extension: end the paused run cleanly with whatever results exist
    (``name``: how people read ``by``, in the run's end)."""
    results = await _results_so_far(svc, run_id)
    usage = await svc.store.run_usage(run_id)
    outcome: list[TransitionResult] = []

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if not run.paused or run.status.terminal:
            outcome[:] = [TransitionResult(False, run, _not_paused(run, "stop"))]
            return None, []
        to = RunStatus.COMPLETED if results else RunStatus.FAILED
        note = f"stopped at its limit ({run.paused}); extension refused by {name or by}"
        step = transition(run, to, by=by, note=note)
        new = step.run
        new.paused = None
        new.result = "\n\n".join(results) if results else None
        new.error = None if results else f"{note}; no agent had finished yet"
        outcome[:] = [step]
        return new, [
            RunFinished(
                run_id=run.id,
                status=to,
                result=new.result,
                error=new.error or note,
                tokens=usage.total_tokens,
                cost_usd=usage.cost_usd,
            )
        ]

    await svc.store.update_run(run_id, change)
    if outcome[0].ok:
        await nudge_all(svc, run_id)
    return outcome[0]


def _not_paused(run: RunState, verb: str = "extend") -> str:
    return f"this run {run.status.words} and is not paused at a limit: there is nothing to {verb}"


async def _results_so_far(svc: Services, run_id: str) -> list[str]:
    """The root's result if it has one, else every finished agent's result, by name."""
    run = await svc.store.get_run(run_id)
    found: list[str] = []
    for agent_id in await svc.store.agent_ids(run_id):
        state = await svc.store.load_agent(run_id, agent_id)
        if state is None or not state.result:
            continue
        if agent_id == run.root_agent_id:
            return [state.result]
        found.append(f"{state.spec.name}: {state.result}")
    return found


async def _resume_parked(svc: Services, run_id: str) -> None:
    """Each parked agent taken out of the parked set and given its turn again (one that
    parks meanwhile stays parked, as it would after the set was emptied)."""
    for agent_id in await parking.parked(svc.store, run_id):
        await parking.unpark(svc.store, run_id, agent_id)
        await nudge(svc, run_id, agent_id)
