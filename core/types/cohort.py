"""A proposed cohort: the plan and the agent tree people approve."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.types._base import Frozen, new_id
from core.types.agent import AgentSpec


class PlanStep(Frozen):
    title: str
    detail: str = ""
    tools: tuple[str, ...] = ()


class TeamSpec(Frozen):
    id: str
    lead_id: str
    name: str = ""
    # The collaboration playbook under core/prompts/patterns/ (discussion, competition, ...).
    pattern: str = "fan_out"


class ReusedEntry(Frozen):
    """A library entry a proposal reuses, with its track record (shown on the card)."""

    entry_id: str
    kind: Literal["agent", "cohort"]
    name: str | None = None
    similarity: float = 0.0
    quality: float = 0.0
    runs: int = 0
    successes: int = 0
    approvals: int = 0
    rejections: int = 0
    ratings: int = 0
    # The mean rating in stars, 1..5 (a thumbs up counts 5, down 1).
    mean_rating: float | None = None
    # For an agent: the id it has in this cohort.
    agent_id: str | None = None
    # For an agent: its brief is rewritten for this task (the planner adapted it).
    adapt: bool = False
    # For a cohort: the task it was kept for (its briefs are rewritten for the new one).
    task: str = ""


class Cohort(Frozen):
    id: str = Field(default_factory=lambda: new_id("coh"))
    task: str
    steps: tuple[PlanStep, ...] = ()
    agents: tuple[AgentSpec, ...]
    teams: tuple[TeamSpec, ...] = ()
    total_budget_usd: float = Field(0.0, ge=0)
    total_budget_tokens: int = Field(0, ge=0)
    rationale: str = ""
    reused_agent_ids: tuple[str, ...] = ()
    # Library entries this proposal reuses (agents), each with its record.
    reused: tuple[ReusedEntry, ...] = ()
    # Set when the whole cohort is a stored one proposed again without planning.
    reused_from: ReusedEntry | None = None

    @property
    def root(self) -> AgentSpec:
        roots = [a for a in self.agents if a.parent_id is None]
        if len(roots) != 1:
            raise ValueError(f"a cohort needs exactly one root agent, found {len(roots)}")
        return roots[0]

    @property
    def patterns(self) -> dict[str, str]:
        """Collaboration pattern per team id."""
        return {t.id: t.pattern for t in self.teams}

    def children_of(self, agent_id: str) -> tuple[AgentSpec, ...]:
        return tuple(a for a in self.agents if a.parent_id == agent_id)
