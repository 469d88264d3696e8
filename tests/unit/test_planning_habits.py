"""Planning with models that do not answer as asked (issue 22): one test per habit —
text only, JSON in prose, in fences, after reasoning, in a tool call's string arguments,
with trailing commas or single quotes, an empty answer first, never valid — and the
ways of asking that step down for them (response_format, the short form)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.errors import LLMError
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.planning import plan
from core.planning.models import planning_model
from core.planning.router import decided_in
from tests.planning_helpers import REGISTRY, TASK, as_json, calls_of, design, model, settings

ROUTE = {"path": "plan", "reason": "several steps"}
SOLO = {
    "steps": [{"title": "Work it out", "tools": ["calculate"]}],
    "agents": [{"name": "Solver", "role": "orchestrator", "tools": ["calculate"]}],
}


def one_model() -> Any:
    """Settings where the router and the planner use the same model."""
    s = settings()
    return s.model_copy(update={"llm": s.llm.model_copy(update={"models": {}})})


async def test_a_text_only_router_takes_the_direct_path_and_says_why() -> None:
    m = model(router=Reply(content="Sure! Berlin is lovely in spring."))
    m.script("router", Reply(content="Happy to help with your trip."))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.path == "direct" and outcome.direct is not None
    assert outcome.direct.role == "ui" and outcome.decision.fallback
    assert "did not answer in the JSON routing needs" in outcome.decision.reason
    first, second = calls_of(m, "router")
    assert first.tools and first.response_format is None
    # No JSON at all: asked again without tools, for structured output with the schema.
    assert not second.tools and second.response_format is not None
    assert second.response_format["type"] == "json_schema"
    assert second.response_format["json_schema"]["schema"]["required"] == ["path", "reason"]
    assert "Start with { and end with }" in (second.messages[-1].content or "")
    assert outcome.llm_calls == 2 and not calls_of(m, "planner")


async def test_a_router_that_says_the_path_in_words_is_taken_at_its_word() -> None:
    m = model(router=Reply(content="Plan.\nThis needs several searches and a comparison."))
    m.script("planner", as_json(SOLO))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.cohort is not None
    assert len(calls_of(m, "router")) == 1
    assert decided_in("Direct: it is one fact.") is not None
    assert decided_in("Plan your trip early and book direct flights.") is None


async def test_json_in_prose_is_read() -> None:
    prose = f"Sure! Here is my design: {json.dumps(SOLO)} Let me know if it helps."
    m = model(planner=(Reply(content=prose),))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and outcome.cohort.root.name == "Solver"
    assert len(calls_of(m, "planner")) == 1


async def test_json_in_a_fence_without_a_language_is_read() -> None:
    fenced = f"Design:\n```\n{json.dumps(SOLO, indent=2)}\n```\nDone."
    m = model(planner=(Reply(content=fenced),))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and len(calls_of(m, "planner")) == 1


async def test_reasoning_before_the_json_is_skipped() -> None:
    thinking = '<think>Maybe {"path": "direct", "reason": "easy"}? No: it has steps.</think>'
    m = model(router=Reply(content=f"{thinking}\n{json.dumps(ROUTE)}"))
    m.script("planner", Reply(content=f"<think>one agent will do</think>{json.dumps(SOLO)}"))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.cohort is not None


async def test_a_tool_call_with_its_arguments_as_a_json_string_is_read() -> None:
    twice = json.dumps(json.dumps(SOLO))  # the arguments are a string holding the JSON
    m = model(
        router=Reply(calls=(call("submit_router", json.dumps(json.dumps(ROUTE))),)),
        planner=(Reply(calls=(call("submit_planner", twice),)),),
    )
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and len(calls_of(m, "planner")) == 1


async def test_a_call_written_in_the_text_is_read() -> None:
    written = {"tool": "submit_planner", "arguments": json.dumps(SOLO)}
    m = model(planner=(Reply(content=f"```json\n{json.dumps(written)}\n```"),))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and outcome.cohort.root.name == "Solver"


async def test_trailing_commas_and_single_quotes_are_repaired() -> None:
    route = "{'path': 'plan', 'reason': 'several steps', 'answer': null,}"
    solo = json.dumps(SOLO).replace("]}", "],}").replace("}]", "},]")
    m = model(router=Reply(content=f"Decision: {route}"), planner=(Reply(content=solo),))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.cohort is not None
    assert len(calls_of(m, "router")) == len(calls_of(m, "planner")) == 1


async def test_an_empty_answer_then_a_good_one() -> None:
    m = model(router=Reply(content=""), planner=(Reply(content=None), as_json(SOLO)))
    m.script("router", Reply(content=json.dumps(ROUTE)))
    outcome = await plan(one_model(), m, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.cohort is not None
    router = calls_of(m, "router")
    assert "the reply was empty" in (router[1].messages[-1].content or "")
    # The router learnt that this model answers on the json_schema rung: the planner
    # starts there.
    first_plan = calls_of(m, "planner")[0]
    assert not first_plan.tools and first_plan.response_format is not None


async def test_a_model_that_ignores_tools_answers_in_text() -> None:
    m = model(router=Reply(content=json.dumps(ROUTE)), planner=(as_json(design()),))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and len(outcome.cohort.agents) == 5
    assert calls_of(m, "planner")[0].tools  # offered, not called: the text was read


async def test_a_planner_that_never_writes_json_falls_back_to_one_agent_with_a_note() -> None:
    m = model(planner=(Reply(content="I would use a researcher and a writer."),) * 6)
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.path == "direct" and outcome.direct is not None and outcome.cohort is None
    assert outcome.note == (
        "The model 'openai/planner' could not design a team (it did not answer in the JSON "
        'the planner needs). Pick a stronger planning model: set planning = "…" under '
        "[llm.models] in config.toml (or CARAMBA_LLM__MODELS__PLANNING=…); the agents "
        "can keep the cheap one."
    )
    # Two replies without JSON end each form early: the full design, then the short one.
    assert len(calls_of(m, "planner")) == 4


async def test_the_short_form_becomes_a_team_led_by_an_orchestrator() -> None:
    bad = Reply(content='{"agents": "a researcher and a writer"}')
    short = [
        {"name": "Researcher", "brief": "Finds the fares.", "tools": "calculate, web_search"},
        {"name": "Writer", "description": "Writes the comparison."},
    ]
    m = model(planner=(bad, bad, bad, Reply(content=json.dumps(short))))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    cohort = outcome.cohort
    assert outcome.path == "plan" and cohort is not None and not outcome.note
    root = cohort.root
    assert root.name == "Orchestrator" and root.role == "orchestrator"
    members = {a.name: a for a in cohort.children_of(root.id)}
    assert set(members) == {"Researcher", "Writer"}
    assert members["Researcher"].role == "member"
    assert members["Researcher"].description == "Finds the fares."
    # Unknown tools are dropped in the short form, not argued about.
    assert "calculate" in members["Researcher"].tools
    assert "web_search" not in members["Researcher"].tools
    (team,) = cohort.teams
    assert team.lead_id == root.id and team.pattern == "fan_out"
    assert members["Writer"].team_id == team.id


async def test_the_short_form_with_one_agent_is_a_solo_orchestrator() -> None:
    bad = Reply(content='{"steps": "many"}')
    short = {"agents": [{"name": "Helper", "brief": "Answers it.", "tools": ["calculate"]}]}
    m = model(planner=(bad, bad, bad, Reply(content=f"```json\n{json.dumps(short)}\n```")))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None
    (agent,) = outcome.cohort.agents
    assert (agent.name, agent.role, agent.parent_id) == ("Helper", "orchestrator", None)


@dataclass
class RefusesSchemas:
    """A server that refuses ``json_schema`` structured output with HTTP 400."""

    inner: ScriptedModel
    refused: list[LLMRequest] = field(default_factory=list)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        fmt: dict[str, Any] = request.response_format or {}
        if fmt.get("type") == "json_schema":
            self.refused.append(request)
            raise LLMError("response_format json_schema is not supported", model="m", status=400)
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


async def test_a_refused_schema_is_asked_again_in_json_mode() -> None:
    m = model(router=Reply(content="Let me think about routing."))
    m.script("router", Reply(content=json.dumps(ROUTE)))
    m.script("planner", as_json(SOLO))
    llm = RefusesSchemas(m)
    outcome = await plan(one_model(), llm, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.cohort is not None
    assert len(llm.refused) == 1
    second = calls_of(m, "router")[1]
    assert second.response_format == {"type": "json_object"} and not second.tools
    # The planner starts where the router's model answered.
    assert calls_of(m, "planner")[0].response_format == {"type": "json_object"}


def test_one_model_for_every_planning_role() -> None:
    s = settings()
    assert planning_model(s, "router") == s.llm.model  # no entry: the main model
    strong = s.model_copy(
        update={
            "llm": s.llm.model_copy(
                update={"models": {"planning": "openai/strong", "prompt_creator": "openai/pc"}}
            )
        }
    )
    assert planning_model(strong, "router") == "openai/strong"
    assert planning_model(strong, "planner") == "openai/strong"
    assert planning_model(strong, "prompt_creator") == "openai/pc"  # its own entry wins
    assert strong.llm.model_for("member") == strong.llm.model  # the agents keep theirs


async def test_the_prompt_creators_reasoning_is_left_out_of_the_prompt() -> None:
    m = model(planner=(as_json(SOLO),))
    m.script("prompt_creator", Reply(content="<think>short is best</think>\nFind the fares."))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None
    assert outcome.cohort.root.system_prompt == "Find the fares."
