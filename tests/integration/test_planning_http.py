"""Planning over the real litellm gateway against the OpenAI-compatible HTTP fake."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from core.llm.gateway import LiteLLMGateway
from core.planning import plan
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.planning_helpers import REGISTRY, TASK

MODEL = "openai/fake-model"


@pytest.fixture
async def llm_server() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer() as server:
        yield server


def solo_design(tools: list[str]) -> dict[str, object]:
    return {
        "steps": [{"title": "Work it out", "tools": tools}],
        "agents": [{"name": "Orchestrator", "role": "orchestrator", "tools": tools}],
    }


async def test_plan_over_http_repairs_and_reflects(llm_server: FakeLLMServer) -> None:
    llm_server.script(
        FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "several steps"})]),
        FakeReply(tool_calls=[("submit_planner", solo_design(["web_search"]))]),
        FakeReply(content=json.dumps(solo_design(["calculate"]))),
        FakeReply(content="Draft: compare the fares."),
        FakeReply(content="Say what to hand back."),
        FakeReply(content="Compare the fares; finish with a table of the three cheapest."),
    )
    settings = make_settings(
        llm={"model": MODEL, "api_base": llm_server.base_url, "api_key_env": ""},
        planning={"reflection_rounds": 1},
    )
    gateway = LiteLLMGateway(settings.llm)
    try:
        outcome = await plan(settings, gateway, REGISTRY, TASK)
    finally:
        await gateway.aclose()
    assert outcome.cohort is not None and outcome.llm_calls == 6
    (agent,) = outcome.cohort.agents
    assert agent.system_prompt.startswith("Compare the fares; finish with a table")
    assert "calculate" in agent.tools and "web_search" not in agent.tools
    router, _rejected, good, *_ = llm_server.requests
    assert {t["function"]["name"] for t in router["tools"]} == {"submit_router"}
    # The rejected tool call was answered on the wire with the exact error.
    reply = good["messages"][-1]
    assert reply["role"] == "tool"
    assert reply["tool_call_id"] == good["messages"][-2]["tool_calls"][0]["id"]
    assert "names unknown tool 'web_search'" in reply["content"]
    assert outcome.usage.total_tokens > 0


async def test_a_text_only_model_is_routed_to_the_direct_path(llm_server: FakeLLMServer) -> None:
    # A server like mockllm or llm-mock-api: plain text, whatever it is asked.
    llm_server.set_responder(lambda _body: FakeReply(content="This is a mock response."))
    settings = make_settings(
        llm={"model": MODEL, "api_base": llm_server.base_url, "api_key_env": ""},
    )
    gateway = LiteLLMGateway(settings.llm)
    try:
        outcome = await plan(settings, gateway, REGISTRY, TASK)
    finally:
        await gateway.aclose()
    assert outcome.path == "direct" and outcome.decision.fallback
    assert outcome.direct is not None and outcome.direct.role == "ui"
    assert outcome.decision.reason == (
        f"The model '{MODEL}' could not route this request (it did not answer in the JSON "
        "routing needs), so one agent answers it directly."
    )
    first, second = llm_server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["submit_router"]
    # Asked again for structured output on the wire, without tools.
    assert "tools" not in second
    assert second["response_format"]["type"] == "json_schema"
    assert second["response_format"]["json_schema"]["name"] == "RouteDecision"


def json_only_when_asked(body: dict[str, object]) -> FakeReply:
    """A local model that writes JSON only under a grammar (structured output)."""
    if "response_format" not in body:
        return FakeReply(content="I'd be glad to help you plan that!")
    if "RouteDecision" in json.dumps(body["response_format"]):
        return FakeReply(content=json.dumps({"path": "plan", "reason": "several steps"}))
    if "CohortDesign" in json.dumps(body["response_format"]):
        return FakeReply(content=json.dumps(solo_design(["calculate"])))
    return FakeReply(content="unexpected")


async def test_structured_output_gets_a_design_from_a_model_that_ignores_tools(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.set_responder(json_only_when_asked)
    settings = make_settings(
        llm={"model": MODEL, "api_base": llm_server.base_url, "api_key_env": ""},
        planning={"reflection_rounds": 0},
    )
    gateway = LiteLLMGateway(settings.llm)
    try:
        outcome = await plan(settings, gateway, REGISTRY, TASK)
    finally:
        await gateway.aclose()
    assert outcome.path == "plan" and outcome.cohort is not None
    (agent,) = outcome.cohort.agents
    assert "calculate" in agent.tools
    # The router's first try offered the tool; the planner started on structured output.
    router_tools, router_json, planner, *prompts = llm_server.requests
    assert "tools" in router_tools and "response_format" in router_json
    assert "tools" not in planner and planner["response_format"]["type"] == "json_schema"
    assert len(prompts) == 1  # the one agent's prompt, drafted
