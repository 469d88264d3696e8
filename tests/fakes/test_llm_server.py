"""Tests proving the fake LLM server through the real litellm client path."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import aiohttp
import litellm
import pytest
import pytest_asyncio

from tests.fakes.llm_server import (
    FakeFailure,
    FakeLLMServer,
    FakeReply,
    ThreadedFakeLLMServer,
)

MODEL = "openai/fake-model"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris today?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Look up the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest_asyncio.fixture
async def server() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer() as srv:
        yield srv


async def _acomplete(srv: FakeLLMServer, **kwargs: object) -> litellm.ModelResponse:
    params: dict = {
        "model": MODEL,
        "api_base": srv.base_url,
        "api_key": "x",
        "messages": MESSAGES,
        "num_retries": 0,
    }
    params.update(kwargs)
    return await litellm.acompletion(**params)


@pytest.mark.asyncio
async def test_tool_call_round_trips(server: FakeLLMServer) -> None:
    server.script(FakeReply(tool_calls=[("get_weather", {"city": "Paris"})]))

    resp = await _acomplete(server)

    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    (req,) = server.requests
    assert req["model"] == "fake-model"  # the wire-level name, without the "openai/" prefix
    assert req["messages"] == MESSAGES


# litellm 1.106.2 imports its MCP gateway (the `mcp` package, pinned in pyproject) whenever
# `tools=` is passed.
@pytest.mark.asyncio
async def test_tools_are_sent_on_the_wire(server: FakeLLMServer) -> None:
    server.script(FakeReply(tool_calls=[("get_weather", {"city": "Paris"})]))

    resp = await _acomplete(server, tools=TOOLS)

    call = resp.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert server.requests[0]["tools"] == TOOLS


@pytest.mark.asyncio
async def test_malformed_arguments_are_sent_verbatim(server: FakeLLMServer) -> None:
    server.script(FakeReply(tool_calls=[("get_weather", '{"city": "Par')]))

    resp = await _acomplete(server)

    assert resp.choices[0].message.tool_calls[0].function.arguments == '{"city": "Par'


@pytest.mark.asyncio
async def test_usage_tokens_explicit_and_estimated(server: FakeLLMServer) -> None:
    server.script(
        FakeReply(content="sunny", prompt_tokens=123, completion_tokens=45),
        FakeReply(content="x" * 40),
    )

    explicit = await _acomplete(server)
    estimated = await _acomplete(server)

    assert explicit.choices[0].message.content == "sunny"
    assert explicit.choices[0].finish_reason == "stop"
    assert explicit.usage.prompt_tokens == 123
    assert explicit.usage.completion_tokens == 45
    assert explicit.usage.total_tokens == 168
    assert estimated.usage.prompt_tokens == len(MESSAGES[0]["content"]) // 4
    assert estimated.usage.completion_tokens == 10
    assert estimated.usage.total_tokens == estimated.usage.prompt_tokens + 10


@pytest.mark.asyncio
async def test_fifo_then_responder_then_default(server: FakeLLMServer) -> None:
    server.script(FakeReply(content="first"), FakeReply(content="second"))

    assert (await _acomplete(server)).choices[0].message.content == "first"
    assert (await _acomplete(server)).choices[0].message.content == "second"
    assert (await _acomplete(server)).choices[0].message.content == "ok"

    server.set_responder(lambda req: FakeReply(content=f"echo:{req['messages'][-1]['content']}"))
    assert (await _acomplete(server)).choices[0].message.content == f"echo:{MESSAGES[0]['content']}"
    server.set_responder(None)
    assert (await _acomplete(server)).choices[0].message.content == "ok"
    assert len(server.requests) == 5


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "exc_class"),
    [
        (429, litellm.RateLimitError),
        (500, litellm.InternalServerError),
        (503, litellm.ServiceUnavailableError),
    ],
)
async def test_failures_map_to_litellm_exceptions(
    server: FakeLLMServer, status: int, exc_class: type[Exception]
) -> None:
    server.script(FakeFailure(status, message="boom", retry_after=1))

    with pytest.raises(exc_class) as excinfo:
        await _acomplete(server)

    assert type(excinfo.value) is exc_class
    assert excinfo.value.status_code == status
    assert "boom" in str(excinfo.value)
    assert len(server.requests) == 1  # num_retries=0: no hidden retries
    # The failure was consumed; the next call gets the default reply.
    assert (await _acomplete(server)).choices[0].message.content == "ok"


@pytest.mark.asyncio
async def test_delayed_failure_provokes_client_timeout(server: FakeLLMServer) -> None:
    server.script(FakeFailure(500, delay_s=5.0))

    started = time.monotonic()
    with pytest.raises(litellm.Timeout):
        await _acomplete(server, timeout=0.2)

    assert time.monotonic() - started < 4.0


@pytest.mark.asyncio
async def test_latency_is_applied(server: FakeLLMServer) -> None:
    server.latency_s = 0.3

    started = time.monotonic()
    resp = await _acomplete(server)

    assert resp.choices[0].message.content == "ok"
    assert time.monotonic() - started >= 0.25


@pytest.mark.asyncio
async def test_raw_wire_format(server: FakeLLMServer) -> None:
    server.script(FakeReply(content="hi"), FakeFailure(429, message="slow down", retry_after=2))
    url = f"{server.base_url}/chat/completions"
    body = {"model": "m1", "messages": MESSAGES}

    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=body) as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == "application/json"
            ok = await r.json()
        async with http.post(url, json=body) as r:
            assert r.status == 429
            assert r.headers["Retry-After"] == "2"
            err = await r.json()
        async with http.post(url, json={**body, "stream": True}) as r:
            assert r.status == 200 and r.content_type == "text/event-stream"
            streaming = await r.text()
        async with http.get(f"{server.base_url}/models") as r:
            models = await r.json()

    assert ok["object"] == "chat.completion"
    assert ok["id"].startswith("chatcmpl-")
    assert ok["model"] == "m1"
    assert ok["choices"][0]["message"] == {"role": "assistant", "content": "hi"}
    assert err["error"]["message"] == "slow down"
    assert err["error"]["type"] == "rate_limit_error"
    assert streaming.startswith("data: {") and streaming.endswith("data: [DONE]\n\n")
    assert [m["id"] for m in models["data"]] == ["fake-model"]
    assert len(server.requests) == 3


@pytest.mark.asyncio
async def test_request_bodies_parse_as_the_standard_library_parses_them(
    server: FakeLLMServer,
) -> None:
    """orjson reads the bodies; what it refuses is read as json.loads reads it (NaN, a
    Latin-1 charset), and what neither reads is still a 400."""
    url = f"{server.base_url}/chat/completions"
    nan = b'{"model": "m1", "messages": [], "temperature": NaN}'
    latin = '{"model": "m1", "messages": [{"role": "user", "content": "caf\u00e9"}]}'
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=nan, headers={"Content-Type": "application/json"}) as r:
            assert r.status == 200
        latin_type = {"Content-Type": "application/json; charset=latin-1"}
        async with http.post(url, data=latin.encode("latin-1"), headers=latin_type) as r:
            assert r.status == 200
        async with http.post(url, data=b"{not json", headers={"Content-Type": "x"}) as r:
            assert r.status == 400
        async with http.post(url, data=b"[1, 2]") as r:
            assert r.status == 400
        async with http.post(url, data=b'{"id": "call_\xff"}') as r:
            assert r.status == 400  # not UTF-8
    nan_body, latin_body = server.requests
    assert nan_body["temperature"] != nan_body["temperature"]  # NaN
    assert latin_body["messages"][0]["content"] == "caf\u00e9"
    ok = FakeReply(tool_calls=[("f", {"x": 1}), ("g", {})])
    server.script(ok)
    async with aiohttp.ClientSession() as http, http.post(url, json={"messages": []}) as r:
        calls = (await r.json())["choices"][0]["message"]["tool_calls"]
    assert [len(c["id"]) for c in calls] == [29, 29]  # "call_" and 24 hex digits
    assert all(int(c["id"][5:], 16) >= 0 for c in calls)


def test_threaded_server_from_sync_code() -> None:
    with ThreadedFakeLLMServer() as srv:
        srv.script(
            FakeReply(tool_calls=[("get_weather", {"city": "Oslo"})]),
            FakeFailure(429),
        )
        resp = litellm.completion(
            model=MODEL,
            api_base=srv.base_url,
            api_key="x",
            messages=MESSAGES,
            num_retries=0,
        )
        call = resp.choices[0].message.tool_calls[0]
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Oslo"}

        with pytest.raises(litellm.RateLimitError):
            litellm.completion(
                model=MODEL, api_base=srv.base_url, api_key="x", messages=MESSAGES, num_retries=0
            )
        assert [r["model"] for r in srv.requests] == ["fake-model", "fake-model"]
