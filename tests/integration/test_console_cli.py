"""``caramba run`` from outside, as a person runs it: the real command in its own process,
litellm against the OpenAI-compatible fake answering as tests/fakes/console_llm.py
scripts it, embedded mode, answers typed on stdin (or Ctrl-C as a signal).

One process answers an agent's question and names the cohort; the next runs that cohort
by name (the library kept between processes), pauses at its budget and is extended;
another is cancelled with Ctrl-C while an agent waits for an answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from tests.fakes import console_llm
from tests.fakes.llm_server import ThreadedFakeLLMServer

CARAMBA = str(Path(sys.executable).parent / "caramba")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer() as fake:
        fake.set_responder(console_llm.respond)
        yield fake


def _env(server: ThreadedFakeLLMServer, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARAMBA_")}
    env.update(
        COLUMNS=extra.pop("COLUMNS", "160"),
        LOGNAME="ana",  # the person at the terminal, named by their login
        CARAMBA_REDIS__URL="",
        CARAMBA_LLM__MODEL="openai/fake-model",
        CARAMBA_LLM__API_BASE=server.base_url,
        CARAMBA_LLM__API_KEY_ENV="",
        CARAMBA_LIBRARY__EMBEDDER="hashing",
        CARAMBA_LIBRARY__INDEX_DIR=str(home / "library"),
        CARAMBA_WORKSPACE__DIR=str(home / "workspaces"),
        **extra,
    )
    return env


def _run(env: dict[str, str], typed: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CARAMBA, "run", *args],
        input=typed,
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_answer_name_then_reuse_by_name_and_extend_at_the_budget(
    server: ThreadedFakeLLMServer, tmp_path: Path
) -> None:
    first = _run(_env(server, tmp_path), "a\nPorto\n5\nasker\n", "please ask me")
    out = first.stdout
    assert first.returncode == 0, out + first.stderr
    assert "? Helper asks: Which city: Lisbon or Porto?" in out
    assert "answered with what you typed before: Porto" in out
    assert "Going with Porto." in out and "Saved as asker" in out
    # Warnings (a model without a price) are in the log, not here.
    assert "WARNING" not in out + first.stderr and "LiteLLM" not in out + first.stderr
    assert "warnings logged to" in out
    logged = (tmp_path / "console.log").read_text("utf-8")
    assert "No price known for the model openai/fake-model" in logged

    priced = f'{{"openai/fake-model": {{"input_per_mtok": {console_llm.PRICE["input_per_mtok"]}}}}}'
    env = _env(server, tmp_path, CARAMBA_LLM__PRICES=priced)
    second = _run(env, "a\ne\n\n\n\n", "--cohort", "asker", "spend it")
    out = second.stdout
    assert second.returncode == 0, out + second.stderr
    assert "Proposal for ana" in out and "│ spend it " in out and "plan:" not in out
    assert "⏸ paused: the run spent $2.00 of $1.50" in out
    assert "extended by $2.00 (now" in out
    assert "Spent enough: 3 sums." in out and "completed ·" in out


def test_ctrl_c_cancels_the_run_and_no_rating_is_asked(
    server: ThreadedFakeLLMServer, tmp_path: Path
) -> None:
    log = tmp_path / "out.txt"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [CARAMBA, "run", "please ask me"],
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_env(server, tmp_path),
            cwd=PROJECT_ROOT,
            text=True,
        )
        try:
            assert process.stdin is not None
            process.stdin.write("a\n")
            process.stdin.flush()
            deadline = time.monotonic() + 120
            while "Helper asks:" not in log.read_text("utf-8"):
                assert process.poll() is None, log.read_text("utf-8")
                assert time.monotonic() < deadline, log.read_text("utf-8")
                time.sleep(0.2)
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=60) == 1
        finally:
            if process.poll() is None:
                process.kill()
    out = log.read_text("utf-8")
    assert "Ctrl-C: cancelling the run (Ctrl-C again quits at once)" in out
    assert "cancelled ·" in out and "The run was cancelled." in out
    assert "Rate the result" not in out and "Traceback" not in out


def test_at_80_columns_the_card_wraps_the_edit_keeps_what_was_given_and_esc_is_text(
    server: ThreadedFakeLLMServer, tmp_path: Path
) -> None:
    """A task with terminal escapes in it, the card at 80 columns, and an edit with a
    budget that is not a number and a tool that does not exist: each refused in a plain
    sentence and asked again, the rest kept; the edited proposal approved and run."""
    task = "please ask me \x1b]0;pwned\x07\x1b[2J which city"
    typed = "e\n\nAsk, then finish.\nnope\nask_user, calculate\n\nabc\n50,000\n\n\nPorto\n\n\n"
    done = _run(_env(server, tmp_path, COLUMNS="80"), typed, task)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert not {"\x1b", "\x07"} & set(out), repr(out)
    assert "please ask me \\x1b]0;pwned\\x07\\x1b[2J which city" in out
    card = out[out.index("╭─ Proposal for ana") : out.index("╯") + 1].splitlines()
    assert max(len(line) for line in card) <= 80 and len(card) <= 20
    assert "└── 1. Helper · orchestrator · openai/fake-model" in out
    assert "Not changed: Helper (tools): there is no tool named nope" in out
    assert "Not a number: write a whole number of tokens, at least 1,000, or leave it" in out
    assert "invalid literal" not in out and "Traceback" not in out
    assert out.count("New instructions") == 1
    assert "50,000 tokens" in out and "“Ask, then finish.”" in out
    assert "Approved by ana." in out and "Going with Porto." in out
