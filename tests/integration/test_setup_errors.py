"""Setup errors from outside, as a person meets them: the real ``caramba`` command in its own
process, with no key, a refused key, a model the server does not know, or no Redis. Each is
said in at most a few lines that name the fix, with a non-zero exit, no traceback and no
"HTTP 500"; the model call is made once (not retried). Nothing reaches the internet: a model
server is the local fake, and where no ``api_base`` is set, the key is found missing before
any call (and the provider's address is pointed at a port nothing listens on, besides)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from tests.fakes.llm_server import FakeFailure, ThreadedFakeLLMServer

pytestmark = pytest.mark.integration

CARAMBA = str(Path(sys.executable).parent / "caramba")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on return: nothing listens there


NOWHERE = f"http://127.0.0.1:{_closed_port()}/v1"
# The model's setup errors read the same through the direct client (the default) and litellm.
CLIENTS = pytest.mark.parametrize("client", ["openai_compat", "litellm"])


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer() as fake:
        yield fake


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CARAMBA_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(
        COLUMNS="200",
        CARAMBA_REDIS__URL="",
        CARAMBA_LLM__MODEL="openai/gpt-4o-mini",
        CARAMBA_LLM__API_BASE="",
        CARAMBA_LLM__API_KEY_ENV="",
        CARAMBA_LIBRARY__EMBEDDER="hashing",
        CARAMBA_LIBRARY__INDEX_DIR=str(home / "library"),
        CARAMBA_WORKSPACE__DIR=str(home / "workspaces"),
        # Were a call made to the provider's own address, it would go nowhere.
        OPENAI_BASE_URL=NOWHERE,
        OPENAI_API_BASE=NOWHERE,
    )
    env.update(extra)
    return env


def _caramba(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CARAMBA, *args],
        env=env,
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _said(result: subprocess.CompletedProcess[str]) -> str:
    """What the person saw, checked for the things that must never be there."""
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "Traceback" not in out and "HTTP 500" not in out, out
    assert "InternalServerError" not in out and "litellm." not in out, out
    return " ".join(out.split())  # the console wraps long lines


def _lines(result: subprocess.CompletedProcess[str]) -> int:
    return len((result.stdout + result.stderr).strip().splitlines())


@CLIENTS
def test_no_key_and_no_server_address_is_said_before_any_call(tmp_path: Path, client: str) -> None:
    result = _caramba(_env(tmp_path, CARAMBA_LLM__CLIENT=client), "run", "--yes", "What is 2+2?")
    said = _said(result)
    assert result.returncode == 2
    assert "No API key for the model openai/gpt-4o-mini — export OPENAI_API_KEY=…" in said
    assert _lines(result) <= 2


@CLIENTS
def test_no_key_for_a_server_that_wants_one(
    server: ThreadedFakeLLMServer, tmp_path: Path, client: str
) -> None:
    missing = "Missing credentials. Please pass an `api_key`, or set `OPENAI_API_KEY`."
    server.set_responder(lambda _body: FakeFailure(401, missing))
    before = len(server.requests)
    env = _env(tmp_path, CARAMBA_LLM__API_BASE=server.base_url, CARAMBA_LLM__CLIENT=client)
    result = _caramba(env, "run", "-y", "hi")
    said = _said(result)
    assert "No API key for the model openai/gpt-4o-mini — export OPENAI_API_KEY=…" in said
    assert len(server.requests) - before == 1, "a setup error is not retried"
    assert _lines(result) <= 5


@CLIENTS
def test_a_refused_key(server: ThreadedFakeLLMServer, tmp_path: Path, client: str) -> None:
    server.set_responder(lambda _body: FakeFailure(401, "Incorrect API key provided: sk-bad"))
    before = len(server.requests)
    env = _env(
        tmp_path,
        CARAMBA_LLM__API_BASE=server.base_url,
        CARAMBA_LLM__CLIENT=client,
        OPENAI_API_KEY="sk-bad",
    )
    said = _said(_caramba(env, "run", "-y", "hi"))
    assert (
        f"{server.base_url} refused the API key for the model openai/gpt-4o-mini (HTTP 401: "
        "Incorrect API key provided: sk-bad) — put a valid key in OPENAI_API_KEY" in said
    )
    assert len(server.requests) - before == 1


@CLIENTS
def test_a_model_the_server_does_not_know(
    server: ThreadedFakeLLMServer, tmp_path: Path, client: str
) -> None:
    gone = "The model `gpt-9` does not exist or you do not have access to it."
    server.set_responder(lambda _body: FakeFailure(404, gone))
    before = len(server.requests)
    env = _env(
        tmp_path,
        CARAMBA_LLM__API_BASE=server.base_url,
        CARAMBA_LLM__MODEL="openai/gpt-9",
        CARAMBA_LLM__CLIENT=client,
        OPENAI_API_KEY="sk-fine",
    )
    said = _said(_caramba(env, "run", "-y", "hi"))
    assert f"{server.base_url} does not know the model openai/gpt-9 (HTTP 404" in said
    assert "set a model it serves in [llm] model or CARAMBA_LLM__MODEL" in said
    assert len(server.requests) - before == 1


@pytest.mark.parametrize("command", [("run", "-y", "hi"), ("worker",), ("worker", "-p", "1")])
def test_redis_down(tmp_path: Path, command: tuple[str, ...]) -> None:
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    env = _env(tmp_path, CARAMBA_REDIS__URL=url, OPENAI_API_KEY="sk-never-used")
    result = _caramba(env, *command)
    said = _said(result)
    assert result.returncode == 2
    assert f"Redis is not reachable at {url} (connection refused)" in said
    assert "start it (redis-server)" in said and "CARAMBA_REDIS__URL" in said
    assert _lines(result) <= 5
    assert "celery" not in said.lower(), "said before Celery starts"


def test_debug_shows_the_traceback_of_an_unexpected_error(tmp_path: Path) -> None:
    """An error nobody expected is one line that points at --debug; --debug shows it whole.
    (A workspace folder that is a file makes `caramba run` fail where nobody checks.)"""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    env = _env(
        tmp_path,
        OPENAI_API_KEY="sk-never-used",
        CARAMBA_LLM__API_BASE=NOWHERE,
        CARAMBA_WORKSPACE__DIR=str(blocker / "workspaces"),
    )
    plain = _caramba(env, "run", "-y", "hi")
    said = _said(plain)
    assert "run with --debug for the details" in said and _lines(plain) <= 3
    debug = _caramba(env, "--debug", "run", "-y", "hi")
    assert debug.returncode != 0 and "Traceback" in debug.stdout + debug.stderr
