"""Design checks: every way a cohort design can be wrong is named for the model."""

from __future__ import annotations

from typing import Any

import pytest

from core.planning import CohortDesign, DesignRules, design_problems
from core.planning.planner import pattern_names
from tests.planning_helpers import REGISTRY, design, prompts_for, settings


def rules(**limits: Any) -> DesignRules:
    s = settings()
    if limits:
        s = s.model_copy(update={"agents": s.agents.model_copy(update=limits)})
    return DesignRules(settings=s, registry=REGISTRY, patterns=pattern_names(prompts_for(s)))


def problems(d: dict[str, Any], r: DesignRules | None = None) -> list[str]:
    return design_problems(CohortDesign.model_validate(d), r or rules())


def with_agent(index: int, **changes: Any) -> dict[str, Any]:
    d = design()
    d["agents"][index].update(changes)
    return d


def test_the_sample_design_is_valid() -> None:
    assert problems(design()) == []
    assert pattern_names(prompts_for(settings())) >= {"fan_out", "discussion", "competition"}


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        (
            design(steps=[{"title": "Search", "tools": ["web_search"]}]),
            "step 'Search' names unknown tool 'web_search'",
        ),
        (with_agent(1, parent="Scout A"), "agent 'Lead A' is in a parent cycle"),
        (with_agent(0, role="lead"), "the root 'Orchestrator' must have role 'orchestrator'"),
        (with_agent(4, role="orchestrator"), "orchestrator 'Judge' must be the root"),
        (with_agent(4, name="Lead B"), "two agents are named 'Lead B'"),
        (with_agent(4, team="C"), "agent 'Judge' is in team 'C', which is no team"),
        (with_agent(3, team="A"), "lead 'Lead B' must have team 'B', the team it leads"),
        (with_agent(2, parent="Judge"), "member 'Scout A' must have a team lead as its parent"),
        (
            design(teams=design()["teams"][:1]),
            "lead 'Lead B' leads no team: add a team it leads",
        ),
        (with_agent(1, reuse="agt_x"), "agent 'Lead A' reuses unknown library agent 'agt_x'"),
        (
            design(teams=[*design()["teams"], {"name": "C", "lead": "Ghost"}]),
            "team 'C' is led by 'Ghost', which is no agent",
        ),
        (
            with_agent(2, max_tokens=2_000_000),
            "the agents' token budgets add up to 2800000; the run allows 1000000",
        ),
        (design(budget_usd=50), "budget_usd 50.0 is over the run's cap of 5.0"),
    ],
)
def test_each_problem_is_named(d: dict[str, Any], expected: str) -> None:
    found = problems(d)
    assert any(expected in p for p in found), found


def test_depth_children_and_size_caps() -> None:
    found = problems(design(), rules(max_depth=1, children_per_agent=2, per_run=4))
    assert "agent 'Scout A' is at depth 2; the maximum is 1" in found
    assert "agent 'Orchestrator' has 3 children; the maximum is 2" in found
    assert "5 agents; the maximum per run is 4" in found
