"""Deciding about a proposal, platform-neutral: who may, what the card shows, and edits.

The chat adapters render :class:`ProposalView` (Slack blocks, Discord components, the
console) and call :func:`decide` with what a person clicked; every rule lives here, so
all adapters enforce the same ones: only the requester and the configured approvers may
decide, a proposal expires after ``approval.expire_s``, and an edit is re-validated
(unknown tools, a broken tree) before it replaces the proposal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from core.runs import learning
from core.runs.control import approve_run, reject_run
from core.tools.catalogue import agent_risks
from core.types._base import Frozen
from core.types.agent import AgentSpec, Budget
from core.types.chat import Usage
from core.types.cohort import Cohort, ReusedEntry
from core.types.events import RunEvent
from core.types.run import RunBudget, RunState, RunStatus

if TYPE_CHECKING:
    from core.config import Settings
    from core.services import Services
    from core.tools.registry import ToolRegistry

_PROMPT_EXCERPT = 300


class AgentEdit(Frozen):
    """Changes to one agent of the proposal; ``None`` leaves a field as it is."""

    agent_id: str
    system_prompt: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1000)
    max_cost_usd: float | None = Field(None, ge=0)
    remove: bool = False


class Approve(Frozen):
    kind: Literal["approve"] = "approve"


class Reject(Frozen):
    kind: Literal["reject"] = "reject"
    reason: str = ""


class Edit(Frozen):
    kind: Literal["edit"] = "edit"
    agents: tuple[AgentEdit, ...] = ()
    add: tuple[AgentSpec, ...] = ()


Decision = Annotated[Approve | Reject | Edit, Field(discriminator="kind")]


@dataclass(frozen=True)
class Outcome:
    """What became of a decision; ``message`` is for the person who made it."""

    ok: bool
    run: RunState
    message: str


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


def may_decide(settings: Settings, run: RunState, user: str) -> str | None:
    """None if ``user`` may decide about ``run``; else the refusal to show them."""
    if user == run.requested_by or user in settings.approval.approvers:
        return None
    return (
        f"Only {run.requested_by} (who asked) or a configured approver can decide about "
        "this proposal. Ask them, or an admin can add you to approval.approvers."
    )


def _agents(run: RunState) -> list[AgentSpec]:
    if run.cohort is not None:
        return list(run.cohort.agents)
    return [run.root] if run.root is not None else []


def view(settings: Settings, run: RunState, tools: ToolRegistry | None = None) -> ProposalView:
    """What the card shows; with ``tools``, each agent's risky tools too."""
    agents = _agents(run)
    names = {a.id: a.name for a in agents}
    cohort = run.cohort
    decided = next(
        (t.by for t in reversed(run.history) if t.to_status is not RunStatus.PROPOSED), None
    )
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
                risks=agent_risks(tools, a.tools) if tools is not None else (),
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


def apply_edit(run: RunState, edit: Edit, tools: ToolRegistry) -> tuple[RunState | None, list[str]]:
    """The proposal with ``edit`` applied, or None and every reason it cannot be."""
    agents = {a.id: a for a in _agents(run)}
    errors: list[str] = []
    for change in edit.agents:
        spec = agents.get(change.agent_id)
        if spec is None:
            errors.append(f"there is no agent {change.agent_id} in this proposal")
            continue
        if change.remove:
            if spec.parent_id is None:
                errors.append(f"{spec.name} is the top agent and cannot be removed")
                continue
            doomed = {spec.id}
            while grown := {a.id for a in agents.values() if a.parent_id in doomed} - doomed:
                doomed |= grown
            for agent_id in doomed:
                agents.pop(agent_id, None)
            continue
        update: dict[str, object] = {}
        if change.system_prompt is not None:
            update["system_prompt"] = change.system_prompt
        if change.tools is not None:
            unknown = tools.unknown(change.tools)
            if unknown:
                errors.append(
                    f"{spec.name}: no tool named {', '.join(unknown)} exists "
                    f"(available: {', '.join(tools.names())})"
                )
                continue
            update["tools"] = tuple(dict.fromkeys(change.tools))
        if change.model is not None:
            update["model"] = change.model or None
        if change.max_tokens is not None or change.max_cost_usd is not None:
            update["budget"] = Budget(
                max_turns=spec.budget.max_turns,
                max_tokens=change.max_tokens or spec.budget.max_tokens,
                max_cost_usd=change.max_cost_usd
                if change.max_cost_usd is not None
                else spec.budget.max_cost_usd,
            )
        agents[spec.id] = spec.model_copy(update=update)
    for new in edit.add:
        if new.parent_id not in agents:
            errors.append(f"{new.name}: its parent {new.parent_id} is not in this proposal")
        elif tools.unknown(new.tools):
            errors.append(f"{new.name}: no tool named {', '.join(tools.unknown(new.tools))}")
        elif any(a.name == new.name for a in agents.values()):
            errors.append(f"an agent named {new.name} already exists")
        else:
            agents[new.id] = new
    if errors:
        return None, errors
    updated = run.model_copy(deep=True)
    specs = tuple(agents.values())
    if run.cohort is not None:
        kept = {a.id for a in specs}
        updated.cohort = Cohort.model_validate(
            run.cohort.model_dump()
            | {
                "agents": [a.model_dump() for a in specs],
                "teams": [t.model_dump() for t in run.cohort.teams if t.lead_id in kept],
            }
        )
        updated.root = updated.cohort.root
    else:
        updated.root = specs[0]
    return updated, []


def _already(svc: Services, run: RunState) -> str:
    by = view(svc.settings, run).decided_by
    return f"This proposal is already {run.status.value} (by {by})."


async def decide(svc: Services, run_id: str, user: str, decision: Decision) -> Outcome:
    """Apply a person's decision about a proposal, or say why it was not applied.

    Approve and reject are one atomic step on the run as it is (who may decide and the
    status are checked inside it); a decision counts for the library entries the proposal
    reused (``learning.decided``)."""

    def guard(run: RunState) -> str | None:
        refusal = may_decide(svc.settings, run, user)
        if refusal is None and run.status is not RunStatus.PROPOSED:
            refusal = _already(svc, run)
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
        return Outcome(True, step.run, f"{verb} by {user}.")
    run = await svc.store.get_run(run_id)
    refusal = guard(run)
    if refusal is not None:
        return Outcome(False, run, refusal)
    edited, errors = apply_edit(run, decision, svc.tools)
    if edited is None:
        return Outcome(False, run, "Not changed: " + "; ".join(errors))

    def change(current: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if current.status is not RunStatus.PROPOSED:
            return None, []
        return current.model_copy(update={"root": edited.root, "cohort": edited.cohort}), []

    saved = await svc.store.update_run(run_id, change)
    if saved is None:
        return Outcome(
            False, await svc.store.get_run(run_id), "The proposal was decided meanwhile."
        )
    return Outcome(True, saved, f"Updated by {user}; approve it to start.")
