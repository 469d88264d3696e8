"""Deciding about a proposal, platform-neutral: who may, what the card shows, and edits.

The chat adapters render :class:`ProposalView` (Slack blocks, Discord components, the
console) and call :func:`decide` with what a person clicked; every rule lives here, so
all adapters enforce the same ones: only the requester and the configured approvers may
decide, a proposal expires after ``approval.expire_s``, and an edit is re-validated
(unknown tools, a broken tree) before it replaces the proposal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from core.runs import learning
from core.runs.budget import edited_budget
from core.runs.control import approve_run, reject_run
from core.runs.edits import Edit, EditProblem, agents_of, apply_edit
from core.tools.catalogue import agent_risks
from core.types._base import Frozen
from core.types.chat import Usage
from core.types.cohort import ReusedEntry
from core.types.events import RunEvent
from core.types.run import SYSTEM, RunBudget, RunState, RunStatus

if TYPE_CHECKING:
    from core.config import Settings
    from core.services import Services
    from core.tools.registry import ToolRegistry

_PROMPT_EXCERPT = 300


class Approve(Frozen):
    kind: Literal["approve"] = "approve"


class Reject(Frozen):
    kind: Literal["reject"] = "reject"
    reason: str = ""


Decision = Annotated[Approve | Reject | Edit, Field(discriminator="kind")]


@dataclass(frozen=True)
class Outcome:
    """What became of a decision; ``message`` is for the person who made it."""

    ok: bool
    run: RunState
    message: str
    # An edit's problems, each with its agent and field (a form shows each in its place).
    problems: tuple[EditProblem, ...] = ()


class AgentCard(Frozen):
    id: str
    name: str
    role: str
    parent: str | None
    model: str
    tools: tuple[str, ...]
    # The tools approvers should notice, with what they may touch (core.tools.catalogue).
    risks: tuple[str, ...] = ()
    prompt_excerpt: str
    max_tokens: int | None
    max_cost_usd: float | None


class ProposalView(Frozen):
    """Everything a proposal card shows, in the order it shows it."""

    run_id: str
    task: str
    requested_by: str
    status: RunStatus
    steps: tuple[str, ...]
    agents: tuple[AgentCard, ...]
    patterns: tuple[str, ...]
    # Library entries reused, each with its track record; the whole cohort's when reused.
    reused: tuple[str, ...]
    reused_from: str | None = None
    budget: RunBudget | None
    expires_at: float | None
    decided_by: str | None
    # Routing and planning already spent on it, when the request was planned.
    planning: Usage | None = None


def _reuse_line(r: ReusedEntry) -> str:
    rating = f", rated {r.mean_rating:.1f}/5 ({r.ratings}×)" if r.mean_rating is not None else ""
    return (
        f"{r.kind} {r.name or r.entry_id} (similarity {r.similarity:.2f}; "
        f"{r.successes}/{r.runs} runs succeeded, {r.approvals} approvals{rating})"
    )


def may_decide(
    settings: Settings,
    run: RunState,
    user: str,
    who: Callable[[str], str] = str,
    *,
    approver: bool = False,
) -> str | None:
    """None if ``user`` may decide about ``run``; else the refusal to show them, naming
    people with ``who`` (an adapter shows a user id as the person's name). ``approver``:
    the adapter found ``user`` to be an approver by the platform's own means (a Discord
    role named in ``[discord]``)."""
    if approver or user == run.requested_by or user in settings.approval.approvers:
        return None
    return (
        f"Only {who(run.requested_by)}, who asked, or one of the approvers your admin named "
        "can decide about this run. Ask them to do it, or ask your admin to add you as an "
        "approver."
    )


def decided_by(run: RunState) -> str | None:
    """Who took the run out of its proposal (an id; ``SYSTEM`` for an expiry), if anyone."""
    return next(
        (t.by for t in reversed(run.history) if t.to_status is not RunStatus.PROPOSED), None
    )


def view(settings: Settings, run: RunState, tools: ToolRegistry | None = None) -> ProposalView:
    """What the card shows; with ``tools``, each agent's risky tools too."""
    agents = agents_of(run)
    names = {a.id: a.name for a in agents}
    cohort = run.cohort
    decided = decided_by(run)
    return ProposalView(
        run_id=run.id,
        task=run.task,
        requested_by=run.requested_by,
        status=run.status,
        steps=tuple(s.title for s in cohort.steps) if cohort else (),
        agents=tuple(
            AgentCard(
                id=a.id,
                name=a.name,
                role=a.role,
                parent=names.get(a.parent_id or ""),
                model=a.model or settings.llm.model_for(a.role),
                tools=a.tools,
                risks=agent_risks(tools, a.tools, settings.tools.approval) if tools else (),
                prompt_excerpt=(a.system_prompt or a.description)[:_PROMPT_EXCERPT],
                max_tokens=a.budget.max_tokens,
                max_cost_usd=a.budget.max_cost_usd,
            )
            for a in agents
        ),
        patterns=tuple(f"{names.get(t.lead_id, t.lead_id)}: {t.pattern}" for t in cohort.teams)
        if cohort
        else (),
        reused=tuple(_reuse_line(r) for r in (cohort.reused if cohort else ())),
        reused_from=_reuse_line(cohort.reused_from) if cohort and cohort.reused_from else None,
        budget=run.budget,
        expires_at=run.expires_at,
        decided_by=decided,
        planning=run.planning,
    )


def _already(svc: Services, run: RunState, who: Callable[[str], str]) -> str:
    by = view(svc.settings, run).decided_by
    if run.status is RunStatus.PLANNING:
        return "This request is still being planned; decide once its proposal is shown."
    done = f"{run.status.value} by {who(by)}" if by and by != SYSTEM else run.status.value
    return f"This proposal was already decided: {done}; it {run.status.words}."


async def decide(
    svc: Services,
    run_id: str,
    user: str,
    decision: Decision,
    who: Callable[[str], str] = str,
    *,
    approver: bool = False,
) -> Outcome:
    """Apply a person's decision about a proposal, or say why it was not applied.

    Approve and reject are one atomic step on the run as it is (who may decide and the
    status are checked inside it); a decision counts for the library entries the proposal
    reused (``learning.decided``). ``approver``: as for :func:`may_decide`."""

    def guard(run: RunState) -> str | None:
        refusal = may_decide(svc.settings, run, user, who, approver=approver)
        if refusal is None and run.status is not RunStatus.PROPOSED:
            refusal = _already(svc, run, who)
        return refusal

    if isinstance(decision, Approve | Reject):
        if isinstance(decision, Approve):
            step, verb = await approve_run(svc, run_id, user, guard=guard), "Approved"
        else:
            step = await reject_run(svc, run_id, user, decision.reason, guard=guard)
            verb = "Rejected"
        if not step.ok:
            return Outcome(False, step.run, step.reason)
        await learning.decided(svc, step.run, approved=isinstance(decision, Approve))
        return Outcome(True, step.run, f"{verb} by {who(user)}.")
    run = await svc.store.get_run(run_id)
    refusal = guard(run)
    if refusal is not None:
        return Outcome(False, run, refusal)
    edited, problems = apply_edit(run, decision, svc.tools, svc.settings)
    if edited is None:
        text = "Not changed: " + "; ".join(str(p) for p in problems)
        return Outcome(False, run, text, problems=tuple(problems))

    def change(current: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if current.status is not RunStatus.PROPOSED:
            return None, []
        update: dict[str, object] = {"root": edited.root, "cohort": edited.cohort}
        # Only an edit of agents' budgets, or of which agents there are, moves the run's.
        budget = edited_budget(svc, current, edited)
        if budget is not None:
            update["budget"] = budget
        return current.model_copy(update=update), []

    saved = await svc.store.update_run(run_id, change)
    if saved is None:
        return Outcome(
            False, await svc.store.get_run(run_id), "The proposal was decided meanwhile."
        )
    return Outcome(True, saved, f"Updated by {who(user)}; approve it to start.")
