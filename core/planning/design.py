"""What the planner model writes: a cohort design, agents named rather than given ids.

:func:`design_problems` lists everything wrong with a design (unknown tools, patterns or
library entries, an invalid tree, caps and budget exceeded) in words the model can act on;
:func:`to_cohort` turns a design without problems into a :class:`Cohort`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from core.config import Settings
from core.tools.registry import ToolRegistry
from core.types._base import new_id
from core.types.agent import AgentSpec, Budget
from core.types.cohort import Cohort, PlanStep, ReusedEntry, TeamSpec


class StepDesign(BaseModel):
    title: str = Field(min_length=1)
    detail: str = ""
    tools: list[str] = Field(default_factory=list)


class AgentDesign(BaseModel):
    name: str = Field(min_length=1)
    role: str = Field(min_length=1)
    # The name of its parent agent; null only for the orchestrator.
    parent: str | None = None
    # The name of the team it belongs to (a lead belongs to the team it leads).
    team: str | None = None
    description: str = ""
    tools: list[str] = Field(default_factory=list)
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_turns: int | None = Field(None, ge=1)
    # The id of a library agent to reuse (its prompt and tools come along).
    reuse: str | None = None
    # With reuse: true = its prompt is rewritten for this task (adapted), false = as is.
    adapt: bool = False


class TeamDesign(BaseModel):
    name: str = Field(min_length=1)
    lead: str = Field(min_length=1)
    pattern: str = "fan_out"


class CohortDesign(BaseModel):
    """A cohort as the planner model describes it."""

    steps: list[StepDesign] = Field(min_length=1)
    agents: list[AgentDesign] = Field(min_length=1)
    teams: list[TeamDesign] = Field(default_factory=list)
    budget_usd: float | None = Field(None, ge=0)
    rationale: str = ""


@dataclass(frozen=True)
class DesignRules:
    """What a design is checked against."""

    settings: Settings
    registry: ToolRegistry
    patterns: frozenset[str]
    # Library agents the planner was shown, by entry id.
    reusable: dict[str, ReusedEntry] = field(default_factory=dict)
    reusable_specs: dict[str, AgentSpec] = field(default_factory=dict)

    def tokens(self, agent: AgentDesign) -> int:
        return agent.max_tokens or self.settings.limits.tokens_per_agent


def design_problems(design: CohortDesign, rules: DesignRules) -> list[str]:
    """Every problem of ``design``, one sentence each; empty when it is valid."""
    return [*_tool_problems(design, rules), *_tree_problems(design, rules), *_caps(design, rules)]


def _tool_problems(design: CohortDesign, rules: DesignRules) -> list[str]:
    problems = []
    known = ", ".join(rules.registry.names())
    for step in design.steps:
        for name in rules.registry.unknown(step.tools):
            problems.append(f"step {step.title!r} names unknown tool {name!r} (known: {known})")
    for agent in design.agents:
        for name in rules.registry.unknown(agent.tools):
            problems.append(f"agent {agent.name!r} names unknown tool {name!r} (known: {known})")
        if agent.reuse is not None and agent.reuse not in rules.reusable:
            shown = ", ".join(rules.reusable) or "none"
            problems.append(
                f"agent {agent.name!r} reuses unknown library agent {agent.reuse!r} "
                f"(shown: {shown})"
            )
    for team in design.teams:
        if team.pattern not in rules.patterns:
            problems.append(
                f"team {team.name!r} has unknown pattern {team.pattern!r} "
                f"(known: {', '.join(sorted(rules.patterns))})"
            )
    return problems


def _tree_problems(design: CohortDesign, rules: DesignRules) -> list[str]:
    problems = []
    by_name: dict[str, AgentDesign] = {}
    for agent in design.agents:
        if agent.name in by_name:
            problems.append(f"two agents are named {agent.name!r}: names must be unique")
        by_name[agent.name] = agent
    roots = [a.name for a in design.agents if a.parent is None]
    if len(roots) != 1:
        problems.append(f"the tree needs exactly one root (parent null), found {roots}")
    elif by_name[roots[0]].role != "orchestrator":
        problems.append(f"the root {roots[0]!r} must have role 'orchestrator'")
    for agent in design.agents:
        if agent.role == "orchestrator" and agent.parent is not None:
            problems.append(f"orchestrator {agent.name!r} must be the root (parent null)")
        if agent.parent is not None and agent.parent not in by_name:
            problems.append(f"agent {agent.name!r} has parent {agent.parent!r}, which is no agent")
    problems += _cycles_and_depth(design, by_name, rules)
    problems += _team_problems(design, by_name)
    return problems


def _cycles_and_depth(
    design: CohortDesign, by_name: dict[str, AgentDesign], rules: DesignRules
) -> list[str]:
    problems, caps = [], rules.settings.agents
    for agent in design.agents:
        seen, node, depth = {agent.name}, agent, 0
        while node.parent is not None and node.parent in by_name:
            node, depth = by_name[node.parent], depth + 1
            if node.name in seen:
                problems.append(f"agent {agent.name!r} is in a parent cycle")
                break
            seen.add(node.name)
        else:
            if depth > caps.max_depth:
                problems.append(
                    f"agent {agent.name!r} is at depth {depth}; the maximum is {caps.max_depth}"
                )
        children = sum(a.parent == agent.name for a in design.agents)
        if children > caps.children_per_agent:
            problems.append(
                f"agent {agent.name!r} has {children} children; "
                f"the maximum is {caps.children_per_agent}"
            )
    if len(design.agents) > caps.per_run:
        problems.append(f"{len(design.agents)} agents; the maximum per run is {caps.per_run}")
    return problems


def _team_problems(design: CohortDesign, by_name: dict[str, AgentDesign]) -> list[str]:
    problems = []
    teams = {t.name: t for t in design.teams}
    for team in design.teams:
        lead = by_name.get(team.lead)
        if lead is None:
            problems.append(f"team {team.name!r} is led by {team.lead!r}, which is no agent")
        elif lead.team != team.name:
            problems.append(f"lead {lead.name!r} must have team {team.name!r}, the team it leads")
    for agent in design.agents:
        if agent.team is not None and agent.team not in teams:
            problems.append(f"agent {agent.name!r} is in team {agent.team!r}, which is no team")
        if agent.role == "lead" and not any(t.lead == agent.name for t in design.teams):
            problems.append(f"lead {agent.name!r} leads no team: add a team it leads")
        if agent.role != "member":
            continue
        parent = by_name.get(agent.parent or "")
        led = [t.name for t in design.teams if parent is not None and t.lead == parent.name]
        if not led:
            problems.append(f"member {agent.name!r} must have a team lead as its parent")
        elif agent.team not in led:
            problems.append(
                f"member {agent.name!r} is in team {agent.team!r} but its lead "
                f"{parent.name if parent else '?'!r} leads {led[0]!r}"
            )
    return problems


def _caps(design: CohortDesign, rules: DesignRules) -> list[str]:
    limits = rules.settings.limits
    total = sum(rules.tokens(a) for a in design.agents)
    problems = []
    if total > limits.tokens_per_run:
        problems.append(
            f"the agents' token budgets add up to {total}; the run allows "
            f"{limits.tokens_per_run}: lower max_tokens or use fewer agents"
        )
    if design.budget_usd is not None and design.budget_usd > limits.cost_per_run_usd:
        problems.append(
            f"budget_usd {design.budget_usd} is over the run's cap of {limits.cost_per_run_usd}"
        )
    return problems


def to_cohort(task: str, design: CohortDesign, rules: DesignRules) -> Cohort:
    """The cohort a valid design describes (ids assigned, base tools added)."""
    settings = rules.settings
    ids = {a.name: new_id("agt") for a in design.agents}
    team_ids = {t.name: new_id("team") for t in design.teams}
    agents, reused = [], []
    for a in design.agents:
        stored = rules.reusable_specs.get(a.reuse or "")
        tools = [*(stored.tools if stored else ()), *a.tools, *settings.agents.base_tools]
        agents.append(
            AgentSpec(
                id=ids[a.name],
                name=a.name,
                role=a.role,
                parent_id=ids.get(a.parent or ""),
                team_id=team_ids.get(a.team or ""),
                system_prompt=stored.system_prompt if stored else "",
                tools=tuple(dict.fromkeys(tools)),
                model=a.model or settings.llm.model_for(a.role),
                budget=Budget(max_tokens=rules.tokens(a), max_turns=a.max_turns),
                description=a.description or (stored.description if stored else ""),
            )
        )
        if a.reuse is not None:
            reused.append(
                rules.reusable[a.reuse].model_copy(
                    update={"agent_id": ids[a.name], "adapt": a.adapt}
                )
            )
    return Cohort(
        task=task,
        steps=tuple(
            PlanStep(title=s.title, detail=s.detail, tools=tuple(s.tools)) for s in design.steps
        ),
        agents=tuple(agents),
        teams=tuple(
            TeamSpec(id=team_ids[t.name], lead_id=ids[t.lead], name=t.name, pattern=t.pattern)
            for t in design.teams
        ),
        total_budget_usd=(
            design.budget_usd if design.budget_usd is not None else settings.limits.cost_per_run_usd
        ),
        total_budget_tokens=sum(rules.tokens(a) for a in design.agents),
        rationale=design.rationale,
        reused_agent_ids=tuple(r.agent_id for r in reused if r.agent_id),
        reused=tuple(reused),
    )
