"""Setup errors of a model call (core/llm/failures.py classifies, core/llm/setup.py words):
no key, a refused key, an unknown model, no server — never retried as if transient (a
refused connection once), each one line that says what to do. Built on litellm 1.106.2's
own exception classes, as the gateway meets them."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from core.errors import ConfigError, LLMError, LLMSetupError
from core.llm.failures import classify, setup_kind
from core.llm.gateway import import_litellm
from core.llm.setup import check_keys, key_variables, missing_key, setup_error
from tests.conftest import make_settings

MODEL = "openai/gpt-4o-mini"


@pytest.fixture(scope="module")
def lm() -> Any:
    return import_litellm()


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1:9/v1"))


def test_no_key_from_the_openai_client_is_a_setup_error_not_a_500(lm: Any) -> None:
    # What litellm raises when the openai client is built without a key: "500".
    exc = lm.InternalServerError(
        "OpenAIException - Missing credentials. Please pass an `api_key`, or set the "
        "`OPENAI_API_KEY` environment variable.",
        llm_provider="openai",
        model=MODEL,
    )
    failure = classify(exc, lm, 60)
    assert (failure.setup, failure.retry, failure.transient) == ("no_key", False, False)


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "bad_key"), (403, "bad_key"), (404, "unknown_model")]
)
def test_refused_keys_and_unknown_models_are_not_retried(lm: Any, status: int, kind: str) -> None:
    cls = {401: lm.AuthenticationError, 403: lm.PermissionDeniedError, 404: lm.NotFoundError}
    if status == 404:
        exc = cls[status]("OpenAIException - The model `x` does not exist", MODEL, "openai")
    else:
        exc = cls[status](
            "OpenAIException - Incorrect API key provided", "openai", MODEL, _response(status)
        )
    failure = classify(exc, lm, 60)
    assert (failure.setup, failure.retry, failure.status) == (kind, False, status)
    assert "litellm" not in failure.message and "OpenAIException" not in failure.message


def test_a_server_that_says_model_not_found_in_a_400_is_an_unknown_model(lm: Any) -> None:
    exc = lm.BadRequestError("OllamaException - model 'llama9' not found", MODEL, "ollama")
    assert setup_kind(exc, lm, 400) == "unknown_model"


def test_transient_failures_stay_transient(lm: Any) -> None:
    for exc in (
        lm.RateLimitError("slow down", "openai", MODEL),
        lm.InternalServerError("overloaded", "openai", MODEL),
        lm.BadRequestError("context too long", MODEL, "openai"),
    ):
        failure = classify(exc, lm, 60)
        assert failure.setup == "", exc
    assert classify(lm.RateLimitError("slow down", "openai", MODEL), lm, 60).retry


def _chained(cause: BaseException, lm: Any) -> BaseException:
    try:
        try:
            raise cause
        except OSError as inner:
            raise lm.InternalServerError("Connection error.", "openai", MODEL) from inner
    except Exception as exc:
        return exc
    raise AssertionError("unreachable")


def test_a_refused_connection_is_tried_once_more_an_unknown_host_not_at_all(lm: Any) -> None:
    refused = classify(_chained(ConnectionRefusedError(111, "Connect call failed"), lm), lm, 60)
    assert (refused.setup, refused.retry, refused.max_attempts) == ("no_server", True, 2)
    unknown = classify(_chained(socket.gaierror(-2, "Name or service not known"), lm), lm, 60)
    assert (unknown.setup, unknown.retry) == ("no_server", False)


def test_each_setup_error_is_one_line_saying_what_to_do() -> None:
    local = make_settings(llm={"model": "openai/llama3", "api_base": "http://127.0.0.1:9/v1"})
    cloud = make_settings(llm={"model": MODEL, "api_base": "", "api_key_env": ""})
    cases = {
        "no_key": (cloud.llm, True, "No API key for the model openai/gpt-4o-mini — "),
        "bad_key": (cloud.llm, True, "the provider refused the API key for the model "),
        "unknown_model": (local.llm, True, "http://127.0.0.1:9/v1 does not know the model "),
        "no_server": (local.llm, True, "Cannot reach the model server at http://127.0.0.1:9/v1"),
    }
    for kind, (llm, keyed, start) in cases.items():
        error = setup_error(llm, llm.model, kind, status=None, attempts=1, keyed=keyed)
        text = str(error)
        assert text.startswith(start), text
        assert "\n" not in text and "HTTP 500" not in text and "Traceback" not in text
        assert isinstance(error, ConfigError) and isinstance(error, LLMError)
        assert error.kind == kind and not error.retryable
    assert "export OPENAI_API_KEY=…" in str(setup_error(cloud.llm, MODEL, "no_key", **_n()))
    assert "CARAMBA_LLM__MODEL" in str(setup_error(local.llm, "openai/x", "unknown_model", **_n()))
    assert "CARAMBA_LLM__API_BASE" in str(setup_error(local.llm, "openai/x", "no_server", **_n()))


def _n() -> dict[str, Any]:
    return {"status": None, "attempts": 1, "keyed": True}


def test_a_refusal_of_no_key_at_all_is_said_as_no_key() -> None:
    """A local server that wants a key, sent none (the placeholder): 'export …', not
    'refused the key'."""
    local = make_settings(llm={"model": "openai/llama3", "api_base": "http://127.0.0.1:9/v1"})
    error = setup_error(local.llm, "openai/llama3", "bad_key", status=401, attempts=1, keyed=False)
    assert error.kind == "no_key" and error.variable == "OPENAI_API_KEY"
    assert str(error) == "No API key for the model openai/llama3 — export OPENAI_API_KEY=…"


def test_the_missing_key_is_named_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(
        llm={"model": MODEL, "api_base": "", "api_key_env": "", "models": {"planner": "x"}}
    )
    problem = check_keys(settings)
    assert isinstance(problem, LLMSetupError) and problem.variable == "OPENAI_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert check_keys(settings) is None
    claude = settings.llm.model_copy(update={"model": "anthropic/claude-sonnet-4"})
    assert key_variables(claude, claude.model) == ("ANTHROPIC_API_KEY",)
    assert "export ANTHROPIC_API_KEY=…" in str(missing_key(claude, claude.model))
    named = settings.llm.model_copy(update={"api_key_env": "MY_TEAM_KEY"})
    monkeypatch.delenv("MY_TEAM_KEY", raising=False)
    assert "export MY_TEAM_KEY=…" in str(missing_key(named, MODEL))
    # A local server may need no key: nothing is said before the call.
    local = settings.llm.model_copy(update={"api_base": "http://127.0.0.1:9/v1"})
    assert missing_key(local, MODEL) is None


def test_litellm_names_the_key_of_other_providers(lm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    llm = make_settings(llm={"model": "cohere/command-r", "api_base": ""}).llm
    assert missing_key(llm, llm.model) is None, "not in the short list: not said without litellm"
    problem = missing_key(llm, llm.model, lm)
    assert problem is not None and problem.variable.endswith("_API_KEY"), problem


def test_every_chat_renders_a_failed_run_as_a_failure() -> None:
    """The relay never offers a failed run for rating (test_slack_results); each renderer
    marks it as a failure, with its reason."""
    from bots.chat.intentions import Result
    from bots.discord.renderer import DiscordRenderer
    from bots.slack.render import SlackRenderer
    from bots.web.chat_render import WebRenderer
    from core.types.run import RunStatus

    reason = "planning failed: No API key for the model m — export OPENAI_API_KEY=…"
    failed = Result("run_1", RunStatus.FAILED, reason)
    (slack,) = SlackRenderer().render(failed)
    (discord,) = DiscordRenderer().render(failed)
    (web,) = WebRenderer().render(failed)
    assert slack.text.startswith(":x: planning failed: No API key") and slack.payload is None
    assert discord.text.startswith("❌ planning failed: No API key")
    assert "👍" not in discord.text and not discord.payload
    assert web.text == f"Failed: {reason}"
    assert isinstance(web.payload, dict) and "rate" not in web.payload and not web.payload["ok"]
