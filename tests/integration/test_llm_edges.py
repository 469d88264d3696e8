"""The model clients' edges over real HTTP, against the local OpenAI-compatible fake: each test
runs through litellm and through the direct client (core/llm/openai_compat.py), which must
behave the same.

A 200 that is not a completion is reported as what it is and retried only when that can help;
a Retry-After within ``llm.retry_after_max_s`` is waited for, a longer one ends the call.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from email.utils import formatdate

import pytest

from core.errors import LLMError, LLMSetupError
from core.llm.base import LLM, LLMRequest
from core.llm.gateway import LiteLLMGateway
from core.llm.openai_compat import OpenAICompatClient
from core.types import ChatMessage
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeFailure, FakeLLMServer, FakeRaw, FakeReply

pytestmark = pytest.mark.integration

MODEL = "openai/fake-model"


CLIENT = "litellm"
MADE: list[LLM] = []


@pytest.fixture(params=["litellm", "direct"], autouse=True)
async def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every test twice: through litellm, and through the direct client."""
    monkeypatch.setattr(sys.modules[__name__], "CLIENT", request.param)
    yield request.param
    while MADE:
        await MADE.pop().aclose()


@pytest.fixture
async def llm_server():
    async with FakeLLMServer() as server:
        yield server


def gateway(api_base: str, **llm: object) -> LLM:
    settings = make_settings(
        llm={
            "model": MODEL,
            "api_base": api_base,
            "api_key_env": "",
            "max_attempts": 4,
            "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05,
            **llm,
        }
    )
    made = LiteLLMGateway(settings.llm) if CLIENT == "litellm" else OpenAICompatClient(settings.llm)
    MADE.append(made)
    return made


def request() -> LLMRequest:
    return LLMRequest(model=MODEL, messages=(ChatMessage(role="user", content="hi"),))


async def failure(server: FakeLLMServer, **llm: object) -> LLMError:
    with pytest.raises(LLMError) as info:
        await gateway(server.base_url, **llm).complete(request())
    return info.value


# -- a 200 that is not a completion ------------------------------------------------------------


async def test_an_html_page_is_reported_as_such_and_not_retried(llm_server) -> None:
    llm_server.set_responder(lambda _body: FakeRaw.html("Corporate proxy: sign in"))
    error = await failure(llm_server)
    message = str(error)
    assert "the model server answered 200 with an HTML page, not a completion" in message
    assert "check llm.api_base (first 200 chars: <!DOCTYPE html> <html><head><title>Corporate" in (
        message
    )
    assert "HTTP 500" not in message and "InternalServerError" not in message
    assert (error.status, error.attempts, error.retryable) == (None, 1, False)
    assert len(llm_server.requests) == 1


async def test_an_html_page_served_as_json_is_still_an_html_page(llm_server) -> None:
    page = FakeRaw.html()
    page.content_type = "application/json"
    llm_server.set_responder(lambda _body: page)
    error = await failure(llm_server)
    assert "answered 200 with an HTML page, not a completion: check llm.api_base" in str(error)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
async def test_a_body_that_is_not_json_fails_at_once(llm_server, content_type: str) -> None:
    llm_server.set_responder(lambda _body: FakeRaw.not_json("upstream ok {", content_type))
    error = await failure(llm_server)
    assert str(error) == (
        f"LLM call to {MODEL} failed after 1 attempt(s): the model server answered 200 with a "
        "body that is not JSON, not a completion: check llm.api_base "
        "(first 200 chars: upstream ok {)"
    )
    assert len(llm_server.requests) == 1


async def test_an_empty_body_and_json_that_is_no_completion_fail_at_once(llm_server) -> None:
    llm_server.script(FakeRaw("", content_type="application/json"))
    error = await failure(llm_server)
    assert "answered 200 with an empty body, not a completion: check llm.api_base" in str(error)
    llm_server.script(FakeRaw("[1, 2]", content_type="application/json"))
    error = await failure(llm_server)
    assert "answered 200 with JSON that is not an object, not a completion: check" in str(error)
    assert "(first 200 chars: [1, 2])" in str(error)
    assert len(llm_server.requests) == 2


async def test_no_choices_is_retried_once_then_reported(llm_server) -> None:
    llm_server.set_responder(lambda _body: FakeRaw.no_choices())
    error = await failure(llm_server)
    assert "the model server answered 200 with no choices (an empty `choices` list)" in str(error)
    assert "IndexError" not in str(error) and "HTTP" not in str(error)
    assert (error.attempts, error.retryable) == (2, True)
    assert len(llm_server.requests) == 2


async def test_no_choices_then_a_completion_succeeds(llm_server) -> None:
    llm_server.script(FakeRaw.no_choices(), FakeReply(content="here"))
    response = await gateway(llm_server.base_url).complete(request())
    assert (response.content, response.attempts) == ("here", 2)


async def test_json_without_a_choices_key_is_retried_once(llm_server) -> None:
    llm_server.set_responder(
        lambda _body: FakeRaw('{"detail": "use /v2"}', content_type="application/json")
    )
    error = await failure(llm_server)
    assert "answered 200 with JSON that has no `choices` list, not a completion" in str(error)
    assert len(llm_server.requests) == 2


async def test_a_real_5xx_html_page_is_still_retried(llm_server) -> None:
    llm_server.script(FakeRaw.html("502 Bad Gateway", status=502), FakeReply(content="back"))
    response = await gateway(llm_server.base_url).complete(request())
    assert (response.content, response.attempts) == ("back", 2)


# -- Retry-After ---------------------------------------------------------------------------------


async def test_a_429_with_retry_after_waits_that_long_then_succeeds(llm_server) -> None:
    llm_server.script(FakeFailure(429, "slow down", retry_after=1), FakeReply(content="now"))
    started = time.monotonic()
    response = await gateway(llm_server.base_url).complete(request())
    assert (response.content, response.attempts) == ("now", 2)
    first, second = llm_server.request_times
    assert 0.95 <= second - first < 1.5  # the server's 1 s, not the 0.05 s backoff
    assert time.monotonic() - started < 5


async def test_retry_after_ms_is_preferred(llm_server) -> None:
    llm_server.script(
        FakeFailure(503, "busy", retry_after=30, retry_after_ms=300), FakeReply(content="ok")
    )
    response = await gateway(llm_server.base_url, retry_after_max_s=5).complete(request())
    assert response.attempts == 2
    first, second = llm_server.request_times
    assert 0.28 <= second - first < 0.9


async def test_a_429_asking_for_too_long_is_not_retried(llm_server) -> None:
    llm_server.set_responder(lambda _body: FakeFailure(429, "daily quota", retry_after=120))
    error = await failure(llm_server, retry_after_max_s=60)
    message = str(error)
    assert message.startswith(
        f"LLM call to {MODEL} failed (HTTP 429) after 1 attempt(s): RateLimitError: the provider "
        "asked to wait 120 s, more than llm.retry_after_max_s = 60; raise it or try later ("
    )
    assert "daily quota" in message
    assert (error.status, error.attempts, error.retryable) == (429, 1, True)
    assert len(llm_server.requests) == 1


async def test_a_503_with_an_http_date_too_far_is_not_retried(llm_server) -> None:
    later = formatdate(time.time() + 600, usegmt=True)
    llm_server.set_responder(lambda _body: FakeFailure(503, "maintenance", retry_after=later))
    error = await failure(llm_server, retry_after_max_s=60)
    # (the date has whole seconds: a little under 600 s are left, said to a tenth: 600 when
    # the clock was just past a whole second)
    assert "(HTTP 503)" in str(error)
    assert re.search(r"the provider asked to wait (59\d(\.\d)?|600) s", str(error)), str(error)
    assert "more than llm.retry_after_max_s = 60; raise it or try later" in str(error)
    assert len(llm_server.requests) == 1


# -- transient failures keep being retried, setup errors are not ---------------------------------


async def test_429s_within_the_ceiling_use_every_attempt(llm_server) -> None:
    llm_server.set_responder(lambda _body: FakeFailure(429, "busy", retry_after=0.01))
    error = await failure(llm_server, max_attempts=3)
    assert (error.status, error.attempts, error.retryable) == (429, 3, True)
    assert "RateLimitError" in str(error) and "busy" in str(error)
    assert len(llm_server.requests) == 3


async def test_connection_refused_is_tried_once_more_then_said_as_a_setup_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    base = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMSetupError) as info:
        await gateway(base, max_attempts=4).complete(request())
    error = info.value
    assert (error.kind, error.status, error.attempts, error.retryable) == (
        "no_server",
        None,
        2,
        False,
    )
    assert str(error) == (
        f"Cannot reach the model server at {base} — start it, or fix [llm] api_base or "
        "CARAMBA_LLM__API_BASE"
    )


# -- streaming -----------------------------------------------------------------------------------


async def test_a_streamed_answer_is_put_together(llm_server) -> None:
    llm_server.script(
        FakeReply(
            content="Adding now.",
            tool_calls=[("add", {"a": 1, "b": 2})],
            prompt_tokens=30,
            completion_tokens=12,
        )
    )
    streamed = request().model_copy(update={"stream": True})
    response = await gateway(llm_server.base_url).complete(streamed)
    assert response.content == "Adding now." and response.attempts == 1
    (call,) = response.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("add", {"a": 1, "b": 2})
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 12)
    assert llm_server.requests[0]["stream"] is True
