"""The real litellm HTTP path, against the local OpenAI-compatible fake, with real Redis."""

from __future__ import annotations

import pytest

from core.errors import LLMError
from core.llm.base import LLMRequest
from core.llm.gateway import LiteLLMGateway
from core.runs.control import start_run
from core.types import AgentSpec, ChatMessage
from core.types.agent import EndReason
from core.types.events import AgentFinished, ErrorRaised, LLMCalled, RunFinished, ToolCalled
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeFailure, FakeLLMServer, FakeReply
from tests.helpers import collect

pytestmark = pytest.mark.integration

MODEL = "openai/fake-model"


@pytest.fixture
async def llm_server():
    async with FakeLLMServer() as server:
        yield server


def llm_settings(server: FakeLLMServer, **llm: object):
    return make_settings(
        llm={
            "model": MODEL,
            "api_base": server.base_url,
            "api_key_env": "",
            "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05,
            **llm,
        }
    )


def request(text: str = "hi") -> LLMRequest:
    return LLMRequest(model=MODEL, messages=(ChatMessage(role="user", content=text),))


async def test_full_run_over_http_with_real_redis(llm_server, real_redis, make_services) -> None:
    llm_server.script(
        FakeReply(
            content="Let me compute.",
            tool_calls=[("calculate", {"expression": "12*12"})],
            prompt_tokens=120,
            completion_tokens=15,
        ),
        FakeReply(
            tool_calls=[("finish", {"result": "144"})], prompt_tokens=160, completion_tokens=12
        ),
    )
    settings = llm_settings(llm_server)
    svc = make_services(settings, LiteLLMGateway(settings.llm), redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    run_id = await start_run(svc, "12 squared?", spec)
    events = await collect(svc, run_id, timeout_s=30)

    assert next(e.result for e in events if isinstance(e, ToolCalled)) == "12*12 = 144"
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert (final.status, final.result, final.tokens) == (RunStatus.COMPLETED, "144", 307)
    # The tools went over the wire as OpenAI function schemas; the tool result came back.
    first, second = llm_server.requests
    assert {t["function"]["name"] for t in first["tools"]} == {"calculate", "finish"}
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": second["messages"][-2]["tool_calls"][0]["id"],
        "content": "12*12 = 144",
        "name": "calculate",
    }
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.usage.total_tokens == 307


async def test_rate_limit_is_retried_then_succeeds(llm_server) -> None:
    llm_server.script(
        FakeFailure(429, "slow down", retry_after=0.01),
        FakeReply(content="fine", prompt_tokens=5, completion_tokens=2),
    )
    gateway = LiteLLMGateway(llm_settings(llm_server).llm)
    response = await gateway.complete(request())
    assert response.content == "fine" and response.attempts == 2
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (5, 2)
    assert len(llm_server.requests) == 2


async def test_timeout_is_retried(llm_server) -> None:
    llm_server.script(FakeFailure(200, delay_s=2.0), FakeReply(content="in time"))
    gateway = LiteLLMGateway(llm_settings(llm_server, timeout_s=0.3).llm)
    response = await gateway.complete(request())
    assert response.content == "in time" and response.attempts == 2


async def test_client_errors_are_not_retried(llm_server) -> None:
    llm_server.script(FakeFailure(401, "bad key"))
    gateway = LiteLLMGateway(llm_settings(llm_server).llm)
    with pytest.raises(LLMError) as info:
        await gateway.complete(request())
    assert info.value.status == 401 and info.value.attempts == 1
    assert len(llm_server.requests) == 1


async def test_persistent_500s_end_the_run_with_a_clear_error(
    llm_server, real_redis, make_services
) -> None:
    llm_server.set_responder(lambda _body: FakeFailure(500, "the model server is down"))
    settings = llm_settings(llm_server, max_attempts=3)
    svc = make_services(settings, LiteLLMGateway(settings.llm), redis=real_redis)
    run_id = await start_run(svc, "anything", AgentSpec(name="Solo", tools=("finish",)))
    events = await collect(svc, run_id, timeout_s=30)

    assert len(llm_server.requests) == 3
    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.LLM_ERROR
    error = next(e for e in events if isinstance(e, ErrorRaised))
    assert "HTTP 500" in error.message and "3 attempt(s)" in error.message
    assert "the model server is down" in error.message
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED
    assert "HTTP 500" in (final.error or "")


async def test_unknown_model_is_priced_at_zero_and_configured_prices_apply(llm_server) -> None:
    llm_server.set_responder(
        lambda _b: FakeReply(content="x", prompt_tokens=1000, completion_tokens=500)
    )
    free = LiteLLMGateway(llm_settings(llm_server).llm)
    assert (await free.complete(request())).usage.cost_usd == 0.0
    assert (await free.complete(request())).usage.cost_usd == 0.0  # no crash the second time
    priced = LiteLLMGateway(
        llm_settings(
            llm_server, prices={MODEL: {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
        ).llm
    )
    cost = (await priced.complete(request())).usage.cost_usd
    assert cost == pytest.approx((1000 * 2.0 + 500 * 10.0) / 1e6)


async def test_cost_is_accounted_per_agent_through_http(
    llm_server, real_redis, make_services
) -> None:
    llm_server.script(
        FakeReply(
            tool_calls=[("calculate", {"expression": "1"})],
            prompt_tokens=1000,
            completion_tokens=100,
        ),
        FakeReply(
            tool_calls=[("finish", {"result": "1"})], prompt_tokens=2000, completion_tokens=200
        ),
    )
    settings = llm_settings(
        llm_server, prices={MODEL: {"input_per_mtok": 1.0, "output_per_mtok": 4.0}}
    )
    svc = make_services(settings, LiteLLMGateway(settings.llm), redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    run_id = await start_run(svc, "1", spec)
    events = await collect(svc, run_id, timeout_s=30)

    costs = [e.cost_usd for e in events if isinstance(e, LLMCalled)]
    assert costs == pytest.approx([0.0014, 0.0028])
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.usage.cost_usd == pytest.approx(0.0042)
    assert (await svc.store.run_usage(run_id)).cost_usd == pytest.approx(0.0042)


async def test_guard_refuses_a_real_provider(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    gateway = LiteLLMGateway(
        make_settings(llm={"model": "openai/gpt-4o-mini", "api_key_env": "", "max_attempts": 1}).llm
    )
    with pytest.raises(LLMError) as info:
        await gateway.complete(
            LLMRequest(
                model="openai/gpt-4o-mini", messages=(ChatMessage(role="user", content="hi"),)
            )
        )
    chain, exc = [], info.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    assert any("tests must stay on loopback" in text for text in chain), chain
