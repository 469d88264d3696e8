"""The direct OpenAI-compatible client against the local fake server: answers, tool calls,
JSON mode, streaming, retries, and the gateway's own errors; a whole run on the default
client; litellm never imported for an openai/… model, and still there for other providers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from core.config import PROJECT_ROOT, LLMSettings
from core.errors import LLMError, LLMSetupError
from core.llm.base import LLMRequest
from core.llm.openai_compat import OpenAICompatClient
from core.llm.router import RoutedLLM
from core.types.chat import ChatMessage
from tests.fakes.llm_server import (
    FakeFailure,
    FakeLLMServer,
    FakeRaw,
    FakeReply,
    ThreadedFakeLLMServer,
)
from tests.fakes.unruly_llm import serve
from tests.integration.test_unruly_models import run

pytestmark = pytest.mark.integration

TOOL = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}


def _settings(base: str, **over: Any) -> LLMSettings:
    fields: dict[str, Any] = {
        "api_base": base,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.02,
        "max_attempts": 3,
        "prices": {"openai/fake-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
    }
    fields.update(over)
    return LLMSettings(**fields)


def _request(model: str = "openai/fake-model", **over: Any) -> LLMRequest:
    return LLMRequest(model=model, messages=(ChatMessage(role="user", content="hi"),), **over)


async def test_plain_answer_tools_and_json_mode() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.script(
            FakeReply(content="hello", prompt_tokens=1000, completion_tokens=500),
            FakeReply(tool_calls=[("add", {"a": 1, "b": 2})]),
        )
        plain = await client.complete(_request(response_format={"type": "json_object"}))
        called = await client.complete(_request(tools=(TOOL,)))
        await client.aclose()
    assert plain.content == "hello" and plain.attempts == 1
    assert plain.usage.prompt_tokens == 1000 and plain.usage.completion_tokens == 500
    assert plain.usage.cost_usd == pytest.approx(0.002)
    (call,) = called.tool_calls
    assert call.name == "add" and json.loads(call.arguments) == {"a": 1, "b": 2}
    first, second = server.requests
    assert first["model"] == "fake-model"
    assert first["response_format"] == {"type": "json_object"}
    assert second["tools"] == [TOOL]


async def test_a_streamed_answer_is_the_same_answer() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.script(
            FakeReply(content="hello there, streamed", prompt_tokens=1000, completion_tokens=500),
            FakeReply(content="and", tool_calls=[("add", {"a": 1, "b": 2}), ("add", "{}")]),
        )
        plain = await client.complete(_request(stream=True))
        called = await client.complete(_request(stream=True, tools=(TOOL,)))
        await client.aclose()
    assert plain.content == "hello there, streamed"
    assert (plain.usage.prompt_tokens, plain.usage.completion_tokens) == (1000, 500)
    assert plain.usage.cost_usd == pytest.approx(0.002)
    assert called.content == "and"
    assert [(c.name, json.loads(c.arguments)) for c in called.tool_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {}),
    ]
    assert all(
        r["stream"] and r["stream_options"] == {"include_usage": True} for r in server.requests
    )


async def test_a_malformed_stream_is_our_error_and_not_retried() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.set_responder(lambda _body: FakeRaw.sse('{"choices": [', "[DONE]"))
        with pytest.raises(LLMError) as caught:
            await client.complete(_request(stream=True))
        await client.aclose()
    assert "stream sent an event that is not a chat-completion chunk" in str(caught.value)
    assert caught.value.attempts == 1 and len(server.requests) == 1


async def test_429_with_retry_after_is_retried_then_answered() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.script(FakeFailure(429, "slow down", retry_after=0.05), FakeReply(content="ok"))
        answer = await client.complete(_request())
        await client.aclose()
    assert answer.content == "ok" and answer.attempts == 2


async def test_500s_exhausted_raise_the_gateways_error() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.script(*[FakeFailure(500, "boom")] * 3)
        with pytest.raises(LLMError) as caught:
            await client.complete(_request())
        await client.aclose()
    assert not isinstance(caught.value, LLMSetupError)
    assert caught.value.attempts == 3 and caught.value.retryable and caught.value.status == 500
    assert "InternalServerError" in str(caught.value) and "boom" in str(caught.value)


async def test_unknown_model_is_a_setup_error_not_retried() -> None:
    async with FakeLLMServer() as server:
        client = OpenAICompatClient(_settings(server.base_url))
        server.script(FakeFailure(404, "The model `nope` does not exist"))
        with pytest.raises(LLMSetupError) as caught:
            await client.complete(_request("openai/nope"))
        await client.aclose()
    assert caught.value.kind == "unknown_model" and caught.value.attempts == 1
    assert "does not know the model openai/nope" in str(caught.value)


@pytest.mark.parametrize("stream", [False, True])
async def test_llm_timeout_s_times_the_whole_exchange(stream: bool) -> None:
    """No answer in time, or an answer whose body (a JSON body, or a stream) stops coming:
    a Timeout after ``llm.timeout_s``, retried as a transient failure."""
    stalled = web.Application()

    async def stall(request: web.Request) -> web.StreamResponse:
        kind = "text/event-stream" if stream else "application/json"
        answer = web.StreamResponse(headers={"Content-Type": kind, "Content-Length": "500"})
        await answer.prepare(request)
        await answer.write(b'data: {"choices": [{"index": 0, "delta": {}}]}\n\n')
        await asyncio.sleep(30)
        return answer

    stalled.router.add_post("/v1/chat/completions", stall)
    async with FakeLLMServer(latency_s=30) as slow, _serving(stalled) as base:
        for where in (slow.base_url, base):
            client = OpenAICompatClient(_settings(where, timeout_s=0.3, max_attempts=2))
            started = time.monotonic()
            with pytest.raises(LLMError) as caught:
                await client.complete(_request(stream=stream))
            await client.aclose()
            assert time.monotonic() - started < 3, where
            assert "Timeout" in str(caught.value), where
            assert caught.value.attempts == 2 and caught.value.retryable, where


@contextlib.asynccontextmanager
async def _serving(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def test_connection_refused_is_no_server() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    client = OpenAICompatClient(_settings(f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(LLMSetupError) as caught:
        await client.complete(_request())
    await client.aclose()
    assert caught.value.kind == "no_server" and caught.value.attempts == 2
    assert "Cannot reach the model server" in str(caught.value)


def test_a_whole_run_through_the_default_client(tmp_path: Path) -> None:
    server = serve("obedient", delay_s=2.0)
    task = "Work out 6*7 and explain the result in one sentence"
    try:
        done = run(server, tmp_path, task, model="openai/obedient")
    finally:
        server.stop()
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode == 0 and "completed" in done.stdout, out
    assert any(r.get("model") == "obedient" for r in server.requests)


_NO_LITELLM = """
import asyncio, sys
from core.config import load_settings
from core.process.jobs import handle
from core.process.wiring import build_llm, build_services
from core.runs.control import start_run
from core.scheduler.inline import InlineScheduler
from core.types import AgentSpec
from tests.helpers import collect

async def main() -> None:
    settings = load_settings(
        redis={"url": ""}, llm={"model": "openai/fake-model", "api_base": sys.argv[1]}
    )
    scheduler = InlineScheduler(4)
    svc = build_services(settings, scheduler, llm=build_llm(settings, keeper=True))
    scheduler.start(lambda job: handle(svc, job))
    run_id = await start_run(svc, "hi", AgentSpec(name="Solo", tools=("finish",)))
    events = await collect(svc, run_id, timeout_s=30)
    await scheduler.stop()
    await svc.aclose()
    heavy = [m for m in ("litellm", "openai", "onnxruntime", "mcp") if m in sys.modules]
    print(events[-1].kind, events[-1].status, "heavy:", ",".join(heavy) or "none")

asyncio.run(main())
"""


def test_a_turn_on_an_openai_model_never_imports_litellm() -> None:
    with ThreadedFakeLLMServer() as server:
        server.script(FakeReply(tool_calls=[("finish", {"result": "done"})]))
        done = subprocess.run(
            [sys.executable, "-c", _NO_LITELLM, server.base_url],
            cwd=PROJECT_ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("CARAMBA_LLM")},
            capture_output=True,
            text=True,
            timeout=120,
        )
        asked = server.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split()[-3:] == ["completed", "heavy:", "none"], done.stdout
    assert [r["model"] for r in asked] == ["fake-model"]


async def test_a_litellm_provider_still_works_through_the_router(monkeypatch: Any) -> None:
    from core.process.wiring import build_llm
    from tests.conftest import make_settings

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-fake")
    async with FakeLLMServer() as server:
        model = "deepseek/fake-model"
        settings = make_settings(
            llm={"model": model, "api_base": server.base_url, "litellm_models": [model]}
        )
        router = build_llm(settings)
        assert isinstance(router, RoutedLLM)
        server.script(FakeReply(tool_calls=[("add", {"a": 1, "b": 2})]))
        answer = await router.complete(_request(model, tools=(TOOL,)))
        await router.aclose()
    assert router.litellm is not None and "litellm" in sys.modules
    assert answer.tool_calls[0].name == "add" and answer.attempts == 1
    (sent,) = server.requests
    assert sent["model"] == "fake-model" and sent["tools"] == [TOOL]
