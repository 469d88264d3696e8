"""``caramba run`` end to end in this process (the scripted model in place of litellm):
an agent's question answered at the prompt, no rating after a reject or a cancel, and
log warnings kept out of the terminal in a log file."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bots.cli import app
from bots.console.logs import FileLogs
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from tests.planning_helpers import ROUTE_PLAN, prompt_writer
from tests.unit.test_console_session import helper

runner = CliRunner()
DESIGN = {
    "steps": [{"title": "Do it", "tools": ["ask_user"]}],
    "agents": [{"name": "Helper", "role": "orchestrator", "tools": ["ask_user"]}],
}


def respond(r: LLMRequest) -> Reply:
    if r.agent_name == "router":
        logging.getLogger("LiteLLM").warning("noise that would break up the spinner")
        return ROUTE_PLAN
    if r.agent_name == "planner":
        return Reply(calls=(call("submit_planner", DESIGN),))
    if r.agent_name == "prompt_creator":
        return prompt_writer(r)
    return helper(r)


@pytest.fixture
def caramba_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setattr(
        "core.process.wiring.build_llm", lambda settings: ScriptedModel(responder=respond)
    )
    env = {
        "COLUMNS": "200",
        "CARAMBA_REDIS__URL": "",
        "CARAMBA_LIBRARY__EMBEDDER": "hashing",
        "CARAMBA_LIBRARY__INDEX_DIR": str(tmp_path / "library"),
        "CARAMBA_WORKSPACE__DIR": str(tmp_path / "workspaces"),
        "CARAMBA_PLANNING__REFLECTION_ROUNDS": "0",
        # caramba run asks for the model's key before it starts; the scripted model needs none.
        "OPENAI_API_KEY": "sk-never-used",
        "LOGNAME": "ana",  # the person at the terminal, named by their login
    }

    def invoke(task: str, typed: str) -> Any:
        return runner.invoke(app, ["run", task], input=typed, env=env)

    return invoke


def test_the_agents_question_is_answered_then_the_run_rated_and_named(
    caramba_run: Any, tmp_path: Path
) -> None:
    result = caramba_run("ask me", "a\nPorto\n4\nmine\n")
    out = result.output
    assert result.exit_code == 0, out
    assert "Helper asks: Which city: Lisbon or Porto?" in out
    assert "Going with Porto." in out
    assert "Rate the result 1-5" in out and "Saved as mine" in out
    assert "Thanks for rating this run" in out  # the people room's outcome (one vote each)
    # The warning went to the log file, not between the run's lines.
    assert "noise that would" not in out
    assert "1 warnings logged to" in out
    log = (tmp_path / "console.log").read_text("utf-8")
    assert "WARNING LiteLLM: noise that would break up the spinner" in log


def test_no_rating_after_a_reject(caramba_run: Any) -> None:
    result = caramba_run("ask me", "r\nnot now\n")
    assert result.exit_code == 1
    assert "Rejected by ana." in result.output
    assert "Rate the result" not in result.output and "Save this cohort" not in result.output


def test_no_rating_after_a_cancel(caramba_run: Any) -> None:
    result = caramba_run("ask me", "a\nc\n")
    assert result.exit_code == 1
    assert "The run was cancelled." in result.output
    assert "Rate the result" not in result.output and "Save this cohort" not in result.output


def test_file_logs_take_litellm_handlers_away_and_give_the_root_back(tmp_path: Path) -> None:
    loud = logging.getLogger("LiteLLM")
    own = logging.StreamHandler()
    loud.addHandler(own)
    before = logging.getLogger().handlers[:]
    logs = FileLogs(tmp_path / "console.log").start()
    try:
        assert own not in loud.handlers and loud.propagate
        loud.warning("cost map")
        assert logs.warnings == 1
    finally:
        logs.stop()
    assert logging.getLogger().handlers == before
    assert "cost map" in (tmp_path / "console.log").read_text("utf-8")


def test_no_input_is_no_approval(caramba_run: Any) -> None:
    """stdin closed before the card was answered (caramba run < /dev/null): nothing runs.
    An empty line is an answer (Enter: approve); no line at all is not."""
    result = caramba_run("ask me", "")
    assert result.exit_code == 1
    assert "the input ended before anyone decided about the proposal" in result.output
    assert "--yes" in result.output and "▶ run" not in result.output


def test_an_edit_refused_by_core_asks_that_field_again_and_keeps_the_rest(
    caramba_run: Any,
) -> None:
    """A tool that does not exist (core's rule) and a budget that is not a number: each
    said plainly and asked again; the edit made of the rest goes through, then runs."""
    typed = "e\n\nI ask first.\nnope\nask_user, calculate\n\nabc\n50000\n\na\nPorto\n\n\n"
    result = caramba_run("ask me", typed)
    out = result.output
    assert result.exit_code == 0, out
    assert "Not changed: Helper (tools): there is no tool named nope" in out
    assert "Not a number: write a whole number of tokens, at least 1,000" in out
    assert "invalid literal" not in out and "Traceback" not in out
    assert out.count("New instructions") == 1  # given once, kept while tools were re-asked
    assert "Updated by ana; approve it to start." in out
    assert re.search(r"1\. Helper · orchestrator · \S+ · 50,000 tokens", out)
    assert "“I ask first.”" in out and "Going with Porto." in out
