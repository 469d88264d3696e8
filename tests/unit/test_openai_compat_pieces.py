"""The direct client's pieces without a server: prices, the key check, the SSE reader."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.config import LLMSettings
from core.errors import LLMSetupError
from core.llm import pricing, sse
from core.llm.base import LLMRequest
from core.llm.failures import CallFailure
from core.llm.openai_compat import OpenAICompatClient
from core.llm.setup import missing_key
from core.types.chat import ChatMessage


def test_shipped_prices_dated_names_and_the_config_override() -> None:
    llm = LLMSettings()
    assert pricing.cost_usd(llm, "openai/gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert pricing.cost_usd(llm, "gpt-4o-mini-2024-07-18", 2_000_000, 0) == pytest.approx(0.30)
    assert pricing.cost_usd(llm, "openai/deepseek-chat", 0, 1_000_000) == pytest.approx(0.42)
    mine = LLMSettings(prices={"openai/gpt-4o-mini": {"input_per_mtok": 1, "output_per_mtok": 0}})
    assert pricing.cost_usd(mine, "openai/gpt-4o-mini", 1_000_000, 5) == pytest.approx(1.0)
    # The client's own figure (litellm's) comes after [llm.prices], before the table.
    assert pricing.cost_usd(llm, "openai/gpt-4o", 10, 10, lambda: 0.5) == 0.5
    assert pricing.cost_usd(mine, "openai/gpt-4o-mini", 0, 0, lambda: 0.5) == 0.0


def test_an_unknown_model_costs_nothing_and_is_said_once(caplog: Any) -> None:
    llm = LLMSettings()
    with caplog.at_level(logging.WARNING, logger="core.llm.pricing"):
        for _ in range(3):
            assert pricing.cost_usd(llm, "openai/my-own-llama", 100, 100) == 0.0
    (record,) = [r for r in caplog.records if "my-own-llama" in r.getMessage()]
    assert "[llm.prices]" in record.getMessage() and "input_per_mtok" in record.getMessage()


def test_which_models_need_a_key(monkeypatch: Any) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    openai = missing_key(LLMSettings(), "openai/gpt-4o-mini")
    assert openai is not None and openai.variable == "OPENAI_API_KEY"
    named = missing_key(LLMSettings(api_key_env="MY_KEY", api_base="http://127.0.0.1:9"), "x")
    assert named is not None and "export MY_KEY=…" in str(named)
    # A server at api_base (local, or a proxy) says so itself if it wants a key.
    assert missing_key(LLMSettings(api_base="http://127.0.0.1:9/v1"), "openai/x") is None
    assert missing_key(LLMSettings(api_base="https://proxy.example.com/v1"), "openai/x") is None
    assert missing_key(LLMSettings(), "hosted_vllm/qwen") is None  # vLLM's key is optional
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")  # waives no key
    assert missing_key(LLMSettings(), "openai/llama3") is not None


async def test_a_missing_key_is_said_before_any_call(monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = OpenAICompatClient(LLMSettings())  # api.openai.com
    request = LLMRequest(model="openai/gpt-4o", messages=(ChatMessage(role="user", content="x"),))
    with pytest.raises(LLMSetupError) as caught:
        await client.complete(request)  # the network guard would fail any connection
    assert caught.value.kind == "no_key" and caught.value.attempts == 0
    assert str(caught.value) == ("No API key for the model openai/gpt-4o — export OPENAI_API_KEY=…")
    assert client._session is None


async def _bytes(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def test_sse_joins_content_and_tool_calls_split_anywhere() -> None:
    whole = b"".join(
        [
            b": keep-alive\n\n",
            _event({"role": "assistant", "content": "Hel"}),
            _event({"content": "lo"}),
            _event({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "add"}}]}),
            _event({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}),
            _event({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "sub"}}]}),
            _event({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}),
            _event({}, "tool_calls"),
            b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}\r\n\r\n',
            b"data: [DONE]\n\n",
        ]
    )
    body = await sse.read(_bytes(*(whole[i : i + 7] for i in range(0, len(whole), 7))))
    message = body["choices"][0]["message"]
    assert message["content"] == "Hello"
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]
    ] == [("c1", "add", '{"a": 1}'), ("c2", "sub", "")]
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}


@pytest.mark.parametrize(
    ("stream", "said", "retried"),
    [
        (b"data: {not json\n\n", "stream sent an event that is not a chat-completion chunk", False),
        (
            b"<html>proxy</html>\n",
            "stream sent an event that is not a chat-completion chunk",
            False,
        ),
        (_event({"content": "half"}), "stream ended before the answer did", True),
        (b'data: {"error": {"message": "overloaded"}}\n\n', "with an error: overloaded", True),
        (b"data: [DONE]\n\n", "no choices", True),
    ],
)
async def test_malformed_streams_are_said_plainly(stream: bytes, said: str, retried: bool) -> None:
    with pytest.raises(CallFailure) as caught:
        await sse.read(_bytes(stream))
    assert said in caught.value.message and caught.value.retry is retried


def test_the_clients_cost_is_pricings_figure_and_an_unpriced_model_counts_zero(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mine = LLMSettings(prices={"openai/my-model": {"input_per_mtok": 0.7, "output_per_mtok": 3}})
    client = OpenAICompatClient(mine)
    body = {
        "choices": [{"message": {"content": "hi"}}],
        "usage": {"prompt_tokens": 1234, "completion_tokens": 77},
    }
    for model in ("openai/my-model", "openai/gpt-4o-mini-2024-07-18", "hosted_vllm/unpriced-h"):
        got = client._parse(model, body, 1).usage.cost_usd
        assert got == pricing.cost_usd(mine, model, 1234, 77)  # the very same float
    assert client._parse("hosted_vllm/unpriced-h", body, 1).usage.cost_usd == 0.0
    assert "No price known for the model hosted_vllm/unpriced-h" in caplog.text
