"""The router picks the client per model; HTTP failures classify as the gateway's do."""

from __future__ import annotations

from typing import Any

from core.config import LLMSettings
from core.llm.base import LLMRequest, LLMResponse
from core.llm.http_failures import from_body, from_status
from core.llm.openai_compat import OpenAICompatClient, wire_model
from core.llm.router import RoutedLLM
from core.types.chat import ChatMessage


class Recording:
    def __init__(self, name: str) -> None:
        self.name = name
        self.models: list[str] = []
        self.closed = False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.models.append(request.model)
        return LLMResponse(model=request.model, content=self.name)

    async def aclose(self) -> None:
        self.closed = True


def _request(model: str) -> LLMRequest:
    return LLMRequest(model=model, messages=(ChatMessage(role="user", content="hi"),))


async def test_router_sends_anthropic_to_litellm_and_openai_to_the_direct_client() -> None:
    direct, lite = Recording("direct"), Recording("litellm")
    made: list[Any] = []

    def make(settings: LLMSettings) -> Any:
        made.append(settings)
        return lite

    router = RoutedLLM(LLMSettings(client="openai_compat"), direct=direct, make_litellm=make)
    assert (await router.complete(_request("openai/gpt-4o-mini"))).content == "direct"
    assert (await router.complete(_request("hosted_vllm/qwen"))).content == "direct"
    assert not made  # litellm is built only when a model needs it
    assert (await router.complete(_request("anthropic/claude-3-5"))).content == "litellm"
    assert direct.models == ["openai/gpt-4o-mini", "hosted_vllm/qwen"]
    assert lite.models == ["anthropic/claude-3-5"]
    await router.aclose()
    assert direct.closed and lite.closed


async def test_router_sends_every_model_to_the_direct_client_with_an_api_base() -> None:
    direct, lite = Recording("direct"), Recording("litellm")
    settings = LLMSettings(client="openai_compat", api_base="http://127.0.0.1:1/v1")
    router = RoutedLLM(settings, direct=direct, make_litellm=lambda s: lite)
    await router.complete(_request("anthropic/claude-3-5"))
    assert direct.models == ["anthropic/claude-3-5"] and not lite.models


def test_prefix_stripped_and_default_client_is_the_direct_one() -> None:
    assert wire_model("openai/gpt-4o") == "gpt-4o"
    assert wire_model("hosted_vllm/m") == "m"
    assert wire_model("gpt-4o") == "gpt-4o"
    assert LLMSettings().client == "openai_compat"


async def test_litellm_forced_per_model_or_for_all() -> None:
    direct, lite = Recording("direct"), Recording("litellm")
    settings = LLMSettings(litellm_models=("openai/o1",))
    router = RoutedLLM(settings, direct=direct, make_litellm=lambda s: lite)
    await router.complete(_request("openai/o1"))
    await router.complete(_request("openai/gpt-4o"))
    assert lite.models == ["openai/o1"] and direct.models == ["openai/gpt-4o"]
    everything = RoutedLLM(
        LLMSettings(client="litellm"), direct=direct, make_litellm=lambda s: lite
    )
    await everything.complete(_request("openai/gpt-4o"))
    assert lite.models == ["openai/o1", "openai/gpt-4o"]


def test_statuses_classify_like_the_gateway() -> None:
    limited = from_status(429, '{"error": {"message": "slow down"}}', {"Retry-After": "2"}, 60)
    assert limited.retry and limited.transient and limited.wait_s == 2
    assert limited.message == "RateLimitError: slow down"
    too_long = from_status(429, "x", {"Retry-After": "600"}, 60)
    assert not too_long.retry and "llm.retry_after_max_s" in too_long.message
    assert from_status(404, '{"error": {"message": "no"}}', {}, 60).setup == "unknown_model"
    assert from_status(401, "bad key", {}, 60).setup == "bad_key"
    assert from_status(400, "bad", {}, 60).retry is False
    assert from_status(500, "boom", {}, 60).message == "InternalServerError: boom"


def test_bodies_that_are_not_completions() -> None:
    assert "an HTML page" in from_body("<html><body>x</body></html>").message  # type: ignore[union-attr]
    assert "no choices" in from_body('{"choices": []}').message  # type: ignore[union-attr]
    assert isinstance(from_body('{"choices": [{"message": {}}]}'), dict)


def test_key_from_the_named_variable(monkeypatch: Any) -> None:
    monkeypatch.setenv("MY_KEY", "sk-secret")
    client = OpenAICompatClient(LLMSettings(api_key_env="MY_KEY"))
    assert client.target("openai/gpt-4o").headers == {"Authorization": "Bearer sk-secret"}


def test_build_llm_gives_the_router_by_default() -> None:
    from core.llm.gateway import LiteLLMGateway
    from core.process.wiring import build_llm
    from tests.conftest import make_settings

    assert isinstance(build_llm(make_settings()), RoutedLLM)
    assert isinstance(build_llm(make_settings(llm={"client": "litellm"})), LiteLLMGateway)
