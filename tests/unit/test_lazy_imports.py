"""Imports that start a process stay light: the ``caramba`` command line (which is also
the ``caramba worker`` supervisor, a process living beside the workers) imports no Celery,
no Redis client and none of the heavy packages; ``tasks.worker`` none of the heavy ones.
Each in a fresh interpreter. Starting the services themselves: test_worker_start.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.config import PROJECT_ROOT

HEAVY = ["litellm", "onnxruntime", "tokenizers", "mcp", "playwright", "httpx"]


def loaded_after(module: str, names: list[str]) -> list[str]:
    code = (
        f"import json, sys, {module}; print(json.dumps([m for m in {names!r} if m in sys.modules]))"
    )
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), CARAMBA_LLM__MODEL="openai/gpt-4o-mini")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: list[str] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("module", ["bots.cli", "tasks.production", "tasks.supervisor"])
def test_the_command_line_and_the_supervisor_import_no_celery(module: str) -> None:
    assert loaded_after(module, [*HEAVY, "celery", "redis", "aiohttp"]) == []


def test_a_worker_imports_none_of_the_heavy_packages() -> None:
    assert loaded_after("tasks.worker", HEAVY) == []


def test_the_doctors_key_check_asks_litellm_only_for_a_model_litellm_calls() -> None:
    check = (
        "from core.config import load_settings; from core.process.doctor import _check_model; "
        "_check_model(load_settings()); import json, sys; print(json.dumps("
        "[m for m in ['litellm'] if m in sys.modules]))"
    )

    def loaded(model: str) -> list[str]:
        env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), CARAMBA_LLM__MODEL=model)
        done = subprocess.run(
            [sys.executable, "-c", check], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found: list[str] = json.loads(done.stdout)
        return found

    assert loaded("openai/gpt-4o-mini") == []
    assert loaded("anthropic/claude-3-5-haiku") == []  # a provider whose key we know
    assert loaded("bedrock/anthropic.claude-v2") == ["litellm"]
