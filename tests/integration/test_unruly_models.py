"""Any model that answers: ``caramba run --yes`` as a person runs it (its own process,
embedded mode) against tests/fakes/unruly_llm.py, an OpenAI-compatible model with one
habit, through the whole flow — route, plan, approve, agents, result. Through the default
(direct) model client, and a few habits through litellm too.

Each run completes with the model's answer (exit 0, the answer printed), never a
traceback; a model that replies with nothing twice ends with a sentence naming the setting
that picks another one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.fakes.unruly_llm import HABITS, serve

pytestmark = pytest.mark.integration

CARAMBA = str(Path(sys.executable).parent / "caramba")
SUM_TASK = "Work out 6*7 and explain the result in one sentence"
SUM_ANSWER = "so the answer is 42."
# A strong planner, cheap workers: planning on a model that calls tools (per-role models).
OBEDIENT_PLANNING = {
    "router": "openai/obedient",
    "planner": "openai/obedient",
    "prompt_creator": "openai/obedient",
}


@pytest.fixture(params=HABITS)
def habit(request: pytest.FixtureRequest) -> Iterator[tuple[str, ThreadedFakeLLMServer]]:
    server = serve(request.param, delay_s=2.0)
    try:
        yield request.param, server
    finally:
        server.stop()


def run(
    server: ThreadedFakeLLMServer,
    home: Path,
    task: str,
    models: dict[str, str] | None = None,
    client: str = "openai_compat",
    model: str = "openai/unruly",
) -> subprocess.CompletedProcess[str]:
    """``caramba run --yes task`` against ``server``, offline, in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARAMBA_")}
    env.update(
        COLUMNS="120",
        CARAMBA_REDIS__URL="",
        CARAMBA_LLM__MODEL=model,
        CARAMBA_LLM__API_BASE=server.base_url,
        CARAMBA_LLM__API_KEY_ENV="",
        CARAMBA_LLM__CLIENT=client,
        CARAMBA_LIBRARY__EMBEDDER="hashing",
        CARAMBA_LIBRARY__INDEX_DIR=str(home / "library"),
        CARAMBA_WORKSPACE__DIR=str(home / "workspaces"),
    )
    if models:
        env["CARAMBA_LLM__MODELS"] = json.dumps(models)
    return subprocess.run(
        [CARAMBA, "run", "--yes", task],
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _answered(done: subprocess.CompletedProcess[str], answer: str) -> bool:
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    return done.returncode == 0 and answer in done.stdout and "completed" in done.stdout


def test_agents_of_each_habit_answer_behind_a_planner_that_calls_tools(
    habit: tuple[str, ThreadedFakeLLMServer], tmp_path: Path
) -> None:
    name, server = habit
    done = run(server, tmp_path, SUM_TASK, OBEDIENT_PLANNING)
    assert _answered(done, SUM_ANSWER), done.stdout + done.stderr
    asked = [r for r in server.requests if r.get("model") == "unruly"]
    assert asked, "the agents used the unruly model"
    if name == "text":
        # Replied in prose, was reminded once, replied in prose again: that is its answer.
        assert len(asked) == 2
        assert "without calling a tool" in asked[1]["messages"][-1]["content"]


@pytest.mark.parametrize("name", HABITS)
def test_the_whole_flow_on_one_model_of_each_habit(name: str, tmp_path: Path) -> None:
    server = serve(name, delay_s=2.0)
    try:
        done = run(server, tmp_path, SUM_TASK)
    finally:
        server.stop()
    # A text-only model cannot route: the request takes the direct path, and the one
    # agent's prose, after a reminder, is the answer.
    assert _answered(done, SUM_ANSWER), done.stdout + done.stderr


@pytest.mark.parametrize("name", ["json_prose", "wrong_types"])
def test_litellm_copes_with_the_same_habits(name: str, tmp_path: Path) -> None:
    """The default client is the direct one; through litellm the same flow ends the same."""
    server = serve(name)
    try:
        done = run(server, tmp_path, SUM_TASK, OBEDIENT_PLANNING, client="litellm")
    finally:
        server.stop()
    assert _answered(done, SUM_ANSWER), done.stdout + done.stderr


def test_a_question_to_a_text_only_model_is_answered(tmp_path: Path) -> None:
    server = serve("text")
    try:
        done = run(server, tmp_path, "What is the capital of France?")
    finally:
        server.stop()
    assert _answered(done, "The capital of France is Paris."), done.stdout + done.stderr


def test_the_fake_runs_as_a_process_of_its_own() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.unruly_llm", "--habit", "json_prose", "--port", "0"],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.rsplit(" ", 1)[-1].strip()
        assert line.startswith("unruly model (json_prose) serving on http://127.0.0.1:"), line
        body = {
            "model": "unruly",
            "messages": [
                {"role": "system", "content": "You are Solo. Call `finish` when done."},
                {"role": "user", "content": "What is the capital of France?"},
            ],
            "tools": [{"type": "function", "function": {"name": "finish", "parameters": {}}}],
        }
        request = urllib.request.Request(
            f"{url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            message = json.load(answer)["choices"][0]["message"]
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "tool_calls" not in message
    assert '"tool": "finish"' in message["content"] and "```json" in message["content"]
    assert "The capital of France is Paris." in message["content"]


def test_a_model_that_says_nothing_ends_with_the_setting_to_change(tmp_path: Path) -> None:
    server = serve("silent")
    try:
        done = run(server, tmp_path, "What is the capital of France?")
    finally:
        server.stop()
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out
    assert "replied with nothing twice in a row" in out, out
    assert "[llm.models] ui" in " ".join(out.split()), out
