"""Edits of a proposal before it is approved: what may change, and every problem with an
edit named by its agent and field, so a form can show each where it belongs.

An agent keeps its base tools (``agents.base_tools``: finish and the messaging tools)
whatever list an edit gives it; a model must be one Caramba can call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError

from core.llm.models import model_problem
from core.types._base import Frozen
from core.types.agent import AgentSpec, Budget
from core.types.cohort import Cohort
from core.types.run import RunState

if TYPE_CHECKING:
    from core.config import Settings
    from core.tools.registry import ToolRegistry

EditField = Literal["agent", "prompt", "tools", "model", "tokens", "cost"]
_FIELD_WORDS = {
    "agent": "agent",
    "prompt": "instructions",
    "tools": "tools",
    "model": "model",
    "tokens": "token budget",
    "cost": "cost budget",
}


class AgentEdit(Frozen):
    """Changes to one agent of the proposal; ``None`` leaves a field as it is."""

    agent_id: str
    system_prompt: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1000)
    max_cost_usd: float | None = Field(None, ge=0)
    remove: bool = False


class Edit(Frozen):
    kind: Literal["edit"] = "edit"
    agents: tuple[AgentEdit, ...] = ()
    add: tuple[AgentSpec, ...] = ()


# An AgentEdit's fields → the form field each is shown under.
FORM_FIELDS: dict[str, EditField] = {
    "system_prompt": "prompt",
    "tools": "tools",
    "model": "model",
    "max_tokens": "tokens",
    "max_cost_usd": "cost",
}


def invalid_fields(exc: ValidationError) -> list[tuple[EditField | None, str]]:
    """Each error of an ``AgentEdit`` that would not validate: the form field it belongs
    to (None: none of them) and its message."""
    return [
        (FORM_FIELDS.get(str(e["loc"][0])) if e["loc"] else None, e["msg"]) for e in exc.errors()
    ]


class EditProblem(Frozen):
    """Why an edit cannot be applied: which agent, which field, and what to do."""

    agent_id: str
    agent_name: str
    field: EditField
    message: str

    def __str__(self) -> str:
        return f"{self.agent_name} ({_FIELD_WORDS[self.field]}): {self.message}"


def agents_of(run: RunState) -> list[AgentSpec]:
    if run.cohort is not None:
        return list(run.cohort.agents)
    return [run.root] if run.root is not None else []


def _tools_problem(tools: ToolRegistry, names: tuple[str, ...]) -> str | None:
    unknown = tools.unknown(names)
    if not unknown:
        return None
    why = [f"{n} is unavailable: {tools.unavailable[n]}" for n in unknown if n in tools.unavailable]
    missing = [n for n in unknown if n not in tools.unavailable]
    parts = [f"there is no tool named {', '.join(missing)}"] if missing else []
    return "; ".join(parts + why) + f" (available: {', '.join(tools.names())})"


def _problem(spec: AgentSpec, field: EditField, message: str) -> EditProblem:
    return EditProblem(agent_id=spec.id, agent_name=spec.name, field=field, message=message)


def _with_base_tools(
    names: tuple[str, ...], tools: ToolRegistry, settings: Settings
) -> tuple[str, ...]:
    """``names`` and the base tools the registry has, each once, in that order."""
    base = [t for t in settings.agents.base_tools if t in tools]
    return tuple(dict.fromkeys((*names, *base)))


def _changed(
    spec: AgentSpec, change: AgentEdit, tools: ToolRegistry, settings: Settings
) -> tuple[AgentSpec, list[EditProblem]]:
    problems: list[EditProblem] = []

    def problem(field: EditField, message: str) -> None:
        problems.append(_problem(spec, field, message))

    update: dict[str, object] = {}
    if change.system_prompt is not None:
        if change.system_prompt.strip():
            update["system_prompt"] = change.system_prompt
        else:
            problem("prompt", "the instructions cannot be empty; write what this agent does")
    if change.tools is not None:
        trouble = _tools_problem(tools, change.tools)
        if trouble:
            problem("tools", trouble)
        else:
            update["tools"] = _with_base_tools(change.tools, tools, settings)
    if change.model:
        trouble = model_problem(settings, change.model)
        if trouble:
            problem("model", trouble)
        else:
            update["model"] = change.model.strip()
    elif change.model is not None:
        update["model"] = None  # empty: the role's default
    if change.max_tokens is not None or change.max_cost_usd is not None:
        update["budget"] = Budget(
            max_turns=spec.budget.max_turns,
            max_tokens=change.max_tokens or spec.budget.max_tokens,
            max_cost_usd=change.max_cost_usd
            if change.max_cost_usd is not None
            else spec.budget.max_cost_usd,
        )
    return spec.model_copy(update=update), problems


def _edited(
    agents: dict[str, AgentSpec], change: AgentEdit, tools: ToolRegistry, settings: Settings
) -> list[EditProblem]:
    """``change`` made to ``agents`` (in place); its problems."""
    spec = agents.get(change.agent_id)
    if spec is None:
        return [
            EditProblem(
                agent_id=change.agent_id,
                agent_name="An agent",
                field="agent",
                message="is not in this proposal any more; reload it",
            )
        ]
    if change.remove:
        return _removed(agents, spec)
    agents[spec.id], found = _changed(spec, change, tools, settings)
    return found


def _removed(agents: dict[str, AgentSpec], spec: AgentSpec) -> list[EditProblem]:
    """``spec`` and every agent under it taken out of ``agents`` (in place), unless it is
    the top agent."""
    if spec.parent_id is None:
        return [_problem(spec, "agent", "is the top agent and cannot be removed")]
    doomed = {spec.id}
    while grown := {a.id for a in agents.values() if a.parent_id in doomed} - doomed:
        doomed |= grown
    for agent_id in doomed:
        agents.pop(agent_id, None)
    return []


def _added(
    agents: dict[str, AgentSpec], new: AgentSpec, tools: ToolRegistry, settings: Settings
) -> list[EditProblem]:
    """``new`` put in ``agents`` (in place) with its base tools; its problems."""
    trouble = _tools_problem(tools, new.tools)
    if new.parent_id not in agents:
        return [_problem(new, "agent", "its parent is not in this proposal")]
    if trouble:
        return [_problem(new, "tools", trouble)]
    if any(a.name == new.name for a in agents.values()):
        return [_problem(new, "agent", "another agent already has this name")]
    agents[new.id] = new.model_copy(update={"tools": _with_base_tools(new.tools, tools, settings)})
    return []


def _with_agents(run: RunState, specs: tuple[AgentSpec, ...]) -> RunState:
    """A copy of ``run`` whose proposal has ``specs`` (a cohort keeps the teams whose
    lead is still in it)."""
    updated = run.model_copy(deep=True)
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
    return updated


def apply_edit(
    run: RunState, edit: Edit, tools: ToolRegistry, settings: Settings
) -> tuple[RunState | None, list[EditProblem]]:
    """The proposal with ``edit`` applied, or None and every problem with it."""
    agents = {a.id: a for a in agents_of(run)}
    problems: list[EditProblem] = []
    for change in edit.agents:
        problems += _edited(agents, change, tools, settings)
    for new in edit.add:
        problems += _added(agents, new, tools, settings)
    if problems:
        return None, problems
    return _with_agents(run, tuple(agents.values())), []
