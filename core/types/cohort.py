"""A proposed cohort: the plan and the agent tree people approve (first version)."""

from __future__ import annotations

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
    # The collaboration playbook under prompts/patterns/ (discussion, competition, ...).
    pattern: str = "fan_out"


class Cohort(Frozen):
    id: str = Field(default_factory=lambda: new_id("coh"))
    task: str
    steps: tuple[PlanStep, ...] = ()
    agents: tuple[AgentSpec, ...]
    teams: tuple[TeamSpec, ...] = ()
    total_budget_usd: float = Field(0.0, ge=0)
    reused_agent_ids: tuple[str, ...] = ()

    @property
    def root(self) -> AgentSpec:
        roots = [a for a in self.agents if a.parent_id is None]
        if len(roots) != 1:
            raise ValueError(f"a cohort needs exactly one root agent, found {len(roots)}")
        return roots[0]
