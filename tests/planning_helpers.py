"""Shared pieces of the planning tests: designs as the model would write them."""

from __future__ import annotations

import json
from typing import Any

from core.llm.scripted import Reply, ScriptedModel, call
from core.prompts import PromptLibrary
from core.tools.defaults import default_registry
from tests.conftest import make_settings

TASK = "Compare the three cheapest flights from Lisbon to Berlin next Friday."
REGISTRY = default_registry()


def settings(**planning: Any) -> Any:
    return make_settings(
        planning={"reflection_rounds": 0, **planning},
        llm={"models": {"orchestrator": "openai/big", "planner": "openai/planner"}},
    )


def prompts_for(s: Any) -> PromptLibrary:
    return PromptLibrary(s.prompts_dir)


def design(**changes: Any) -> dict[str, Any]:
    """A valid design: an orchestrator, two competing teams (lead + member), a judge."""
    d: dict[str, Any] = {
        "steps": [
            {"title": "Find fares", "tools": ["calculate"]},
            {"title": "Compare", "detail": "pick the best three"},
        ],
        "agents": [
            {"name": "Orchestrator", "role": "orchestrator", "description": "runs it"},
            {"name": "Lead A", "role": "lead", "parent": "Orchestrator", "team": "A"},
            {
                "name": "Scout A",
                "role": "member",
                "parent": "Lead A",
                "team": "A",
                "tools": ["calculate"],
                "max_tokens": 50_000,
            },
            {"name": "Lead B", "role": "lead", "parent": "Orchestrator", "team": "B"},
            {"name": "Judge", "role": "judge", "parent": "Orchestrator"},
        ],
        "teams": [
            {"name": "A", "lead": "Lead A", "pattern": "fan_out"},
            {"name": "B", "lead": "Lead B", "pattern": "discussion"},
        ],
        "rationale": "two teams compete, a judge picks",
    }
    d.update(changes)
    return d


def as_json(value: Any) -> Reply:
    return Reply(content=f"Here is the plan:\n```json\n{json.dumps(value)}\n```")


ROUTE_PLAN = Reply(calls=(call("submit_router", {"path": "plan", "reason": "many steps"}),))


def prompt_writer(request: Any) -> Reply:
    """The prompt creator's replies: a draft, a critique, a refinement, by template."""
    text = request.messages[-1].content or ""
    if "The agent: " not in text:  # not the prompt creator: a planner asked again
        return Reply(content="I cannot help with that.")
    name = text.split("The agent: ", 1)[1].split(",", 1)[0]
    if "Critique the draft" in text:
        return Reply(content=f"Critique of {name}: say when to finish.")
    if "A reviewer's critique" in text:
        return Reply(content=f"Refined prompt for {name}.")
    return Reply(content=f"Draft prompt for {name}.")


def model(*, router: Reply = ROUTE_PLAN, planner: tuple[Reply, ...] = ()) -> ScriptedModel:
    m = ScriptedModel(responder=prompt_writer)
    m.script("router", router)
    if planner:
        m.script("planner", *planner)
    return m


def calls_of(m: ScriptedModel, agent_name: str) -> list[Any]:
    return [r for r in m.requests if r.agent_name == agent_name]
