"""The planner's last resort: a smaller schema a weaker model can fill in.

When a model cannot write a valid :class:`~core.planning.design.CohortDesign` (a tree of
agents with parents, teams and patterns), it is asked for a flat list of agents — a name,
a brief and tools each — and the tree is built by code (:func:`to_design`): one agent
works alone as the orchestrator; several become the members of one team the orchestrator
leads (``fan_out``), under an orchestrator of their own unless one of them is one. Unknown
tools are dropped rather than argued about, names made unique, the list cut to the caps.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from core.planning.design import AgentDesign, CohortDesign, DesignRules, StepDesign, TeamDesign

_ROOT_ROLES = ("orchestrator", "coordinator", "manager", "lead", "leader", "planner")
ROOT_NAME = "Orchestrator"
TEAM_NAME = "Team"


class SimpleAgent(BaseModel):
    name: str = Field(min_length=1)
    role: str = ""
    brief: str = Field("", validation_alias=AliasChoices("brief", "description", "task", "job"))
    tools: list[str] = Field(default_factory=list)

    @field_validator("tools", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        """``"web_search, calculate"`` as a list; ``null`` as none."""
        if value is None:
            return []
        if isinstance(value, str):
            return [t for t in re.split(r"[,\s]+", value) if t]
        return value


class SimpleDesign(BaseModel):
    """A flat list of agents (and, optionally, the steps as plain lines)."""

    agents: list[SimpleAgent] = Field(min_length=1)
    steps: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, value: Any) -> Any:
        """A bare list of agents is the list of agents."""
        return {"agents": value} if isinstance(value, list) else value

    @field_validator("steps", mode="before")
    @classmethod
    def _step_lines(cls, value: Any) -> Any:
        """Steps written as objects count by their title."""
        if not isinstance(value, list):
            return [] if value is None else value
        return [
            str(s.get("title") or s.get("step") or s) if isinstance(s, dict) else str(s)
            for s in value
        ]


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        n = seen.get(name, 0) + 1
        seen[name] = n
        out.append(name if n == 1 else f"{name} {n}")
    return out


def to_design(task: str, simple: SimpleDesign, rules: DesignRules) -> CohortDesign:
    """The cohort design ``simple`` stands for (see the module docstring)."""
    caps, limits = rules.settings.agents, rules.settings.limits
    # Room for the agents within the caps (each at the default token budget), one for a
    # root of their own.
    room = min(caps.per_run, limits.tokens_per_run // limits.tokens_per_agent)
    listed = simple.agents[: max(1, room - 1)]
    names = _unique([a.name.strip() or "Agent" for a in listed])
    known = set(rules.registry.names())

    def tools(a: SimpleAgent) -> list[str]:
        return list(dict.fromkeys(t for t in a.tools if t in known))

    roots = [i for i, a in enumerate(listed) if a.role.strip().lower() in _ROOT_ROLES]
    root_at = roots[0] if roots else (0 if len(listed) == 1 else None)
    workers = [i for i in range(len(listed)) if i != root_at][: caps.children_per_agent]
    if root_at is not None:
        root = AgentDesign(
            name=names[root_at],
            role="orchestrator",
            description=listed[root_at].brief,
            tools=tools(listed[root_at]),
        )
    else:
        who = ", ".join(names[i] for i in workers)
        root = AgentDesign(
            name=ROOT_NAME if ROOT_NAME not in names else f"{ROOT_NAME} (lead)",
            role="orchestrator",
            description=f"Splits the task among {who}, then merges their results.",
        )
    agents = [root]
    teams = []
    if workers:
        root = root.model_copy(update={"team": TEAM_NAME})
        agents = [root]
        teams = [TeamDesign(name=TEAM_NAME, lead=root.name, pattern="fan_out")]
        agents += [
            AgentDesign(
                name=names[i],
                role="member",
                parent=root.name,
                team=TEAM_NAME,
                description=listed[i].brief,
                tools=tools(listed[i]),
            )
            for i in workers
        ]
    steps = [StepDesign(title=s[:200]) for s in simple.steps if s.strip()]
    return CohortDesign(
        steps=steps or [StepDesign(title=task[:200] or "Do the task")],
        agents=agents,
        teams=teams,
        rationale="A simple team: the planning model answered the short form.",
    )
