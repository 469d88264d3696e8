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
