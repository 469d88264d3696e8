"""What a process loads to start (issue 25: a worker starts in under 2 s with an
OpenAI-compatible model): with an ``openai/…`` model and no MCP server, starting a turn
worker's runtime, or a chat bot's services, imports none of litellm, onnxruntime,
tokenizers, mcp, playwright; each is imported once it is used (the library on first use,
the MCP SDK with a server configured). Each case runs in a fresh interpreter, building
the services the way the process does (``WorkerRuntime.start`` as the worker's boot step
does; ``chat_services`` as ``caramba slack`` / ``discord`` / ``web`` do), on the test
Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from tests.conftest import REDIS_URL
from tests.integration.processes import unique_prefix

pytestmark = pytest.mark.integration

HEAVY = ("litellm", "onnxruntime", "tokenizers", "mcp", "playwright")
FAKE_MCP = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")

# Prints, as JSON, the heavy modules loaded once the services are up ("start") and, with
# "library", once the agent library was opened and embedded a text ("library").
_SCRIPT = """
import asyncio, json, sys
from core.config import load_settings

case = json.loads(sys.argv[1])
heavy = case["heavy"]
settings = load_settings(**case["settings"])
seen = {}

def loaded():
    return [m for m in heavy if m in sys.modules]

if case["process"] == "worker":
    from tasks.app import make_app, runtime_of

    runtime = runtime_of(make_app(settings))
    runtime.start()
    seen["start"] = loaded()
    if case["library"]:
        async def embed():
            library = await runtime._svc.library()
            await library.embedder.embed(["a turn worker"])

        runtime._loop.run(embed(), timeout=60)
        seen["library"] = loaded()
    runtime.stop(grace_s=1)
else:
    from tasks.services import chat_services

    async def bot():
        async with chat_services(settings):
            seen["start"] = loaded()

    asyncio.run(bot())
print(json.dumps(seen))
"""


def start(
    process: str, prefix: str, *, mcp: bool = False, library: bool = False
) -> dict[str, list[str]]:
    servers = {"fake": {"command": sys.executable, "args": [FAKE_MCP]}} if mcp else {}
    case = {
        "process": process,
        "library": library,
        "heavy": HEAVY,
        "settings": {
            "redis": {"url": REDIS_URL, "key_prefix": prefix},
            "celery": {"queue": f"{prefix}-turns"},
            "llm": {"model": "openai/gpt-4o-mini", "client": "openai_compat"},
            "mcp": {"servers": servers},
        },
    }
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), OPENAI_API_KEY="sk-test")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(case)],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_a_worker_starts_without_the_heavy_imports() -> None:
    with unique_prefix() as prefix:
        assert start("worker", prefix)["start"] == []


def test_a_chat_bot_publishing_to_workers_starts_without_them() -> None:
    with unique_prefix() as prefix:
        assert start("bot", prefix)["start"] == []


def test_the_library_and_mcp_load_them_when_used() -> None:
    """The check sees what it looks for: the MCP SDK with a server configured, the
    embedder's runtime once the library embeds (config.toml: the ONNX embedder)."""
    with unique_prefix() as prefix:
        seen = start("worker", prefix, mcp=True, library=True)
    assert "mcp" in seen["start"]
    assert "onnxruntime" not in seen["start"]
    assert {"onnxruntime", "tokenizers"} <= set(seen["library"])
    assert "litellm" not in seen["library"]
