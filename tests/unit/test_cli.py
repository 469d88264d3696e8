"""The command line: the offline demo and doctor."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bots.cli import app

runner = CliRunner()


def test_demo_plans_proposes_approves_and_runs_a_team_offline() -> None:
    """The product's main job with no service: router → planner and prompt creator → the
    card → approval (automatic: not a terminal) → five agents over the bus → the result."""
    result = runner.invoke(app, ["demo"], env={"COLUMNS": "200", "LOGNAME": "ana"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "scripted offline model" in out
    assert "router (1 call): plan" in out and "planner (1 call): 5 agents" in out
    assert "prompt creator (15 calls)" in out  # draft, critique, refine × 5
    card, run = out.split("approved automatically (not a terminal)")
    # The person at the terminal, by their login name (names, never ids).
    assert "Proposal for ana" in card and "Budget our 3-night team offsite" in card
    for i, name in enumerate(("Orchestrator", "Budget lead", "Trains", "Rooms", "Meals"), 1):
        assert f"── {i}. {name} · " in card  # the agent tree (bots/console/card.py)
    assert "Budget lead · lead · team: fan out" in card and "scripted/offline" in card
    assert "Approved by ana." in run and "by console" not in out
    for member, amount in (("Trains", "1068"), ("Rooms", "2520"), ("Meals", "1980")):
        assert f"✉ Budget lead → {member}: Your part" in run  # fan-out
        assert f"✓ {member} calculate(" in run
        assert f"✉ {member} → Budget lead: {member}: €{amount}" in run  # fan-in
    assert "✉ Budget lead → Orchestrator: budget.md is written" in run
    assert "✓ Budget lead write_file(" in run and "✓ Orchestrator read_file(" in run
    assert "completed ·" in run and "Total: €5568" in run
    assert "Checked: the parts add up to the total (€5568)." in run


async def test_the_demo_flow_takes_edits_like_any_proposal() -> None:
    """At a terminal a person may edit the card: a member removed, the lead does its part."""
    from core.process.demo_flow import run_demo
    from core.runs.approval import Approve, Decision, ProposalView
    from core.runs.edits import AgentEdit, Edit
    from tests.conftest import make_settings

    shown: list[list[str]] = []

    async def ask(view: ProposalView) -> Decision:
        shown.append([a.name for a in view.agents])
        if len(shown) == 1:
            trains = next(a for a in view.agents if a.name == "Trains")
            return Edit(agents=(AgentEdit(agent_id=trains.id, remove=True),))
        return Approve()

    said: list[str] = []
    run = await run_demo(make_settings(), ask, on_message=said.append, timeout_s=20)
    assert shown[1] == ["Orchestrator", "Budget lead", "Rooms", "Meals"]
    assert run.status.value == "completed" and run.result is not None
    assert "Trains: €1068" in run.result and "Total: €5568" in run.result
    assert said[-1] == "Approved by console."


def test_solo_demo_runs_one_agent_with_its_tools() -> None:
    result = runner.invoke(app, ["demo", "--solo"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "scripted offline model" in out
    for tool in ("calculate", "days_between", "current_time", "finish"):
        assert f"✓ Demo assistant {tool}(" in out
    assert "completed" in out and "31622400 seconds" in out


def test_doctor_reports_what_to_set(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CARAMBA_REDIS__URL", "redis://127.0.0.1:1/0")  # nothing listens there
    monkeypatch.setenv("COLUMNS", "250")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    out = result.output
    assert "not reachable" in out and "CARAMBA_REDIS__URL" in out
    assert "OPENAI_API_KEY" in out
    assert "DISCORD_BOT_TOKEN" in out


@pytest.mark.integration
def test_doctor_passes_with_a_local_model_server(monkeypatch) -> None:
    """Doctor calls the model once: a server that answers passes; a wrong key fails
    there, in plain words, instead of at the first run."""
    from tests.fakes.llm_server import FakeFailure, FakeReply, ThreadedFakeLLMServer

    with ThreadedFakeLLMServer() as server:
        monkeypatch.setenv("CARAMBA_REDIS__URL", "redis://127.0.0.1:6379/15")
        monkeypatch.setenv("CARAMBA_LLM__MODEL", "openai/fake")
        monkeypatch.setenv("CARAMBA_LLM__API_BASE", server.base_url)
        monkeypatch.setenv("COLUMNS", "250")
        server.script(FakeReply(content="OK"))
        result = runner.invoke(app, ["doctor"])
        assert result.exit_code == 0, result.output
        assert "answers (Redis" in result.output
        assert "openai/fake answered 'OK'" in result.output

        server.script(FakeFailure(status=401, message="Incorrect API key provided"))
        result = runner.invoke(app, ["doctor"])
        assert result.exit_code == 1
        assert "model call" in result.output and "OPENAI_API_KEY" in result.output
        # The word and the tool probe, then the refused call alone; no retries.
        assert len(server.requests) == 3


def test_bad_config_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("CARAMBA_LIMITS__TURNS_PER_AGENT", "many")
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 2
    assert "limits.turns_per_agent" in result.output


def test_run_answers_a_simple_request_directly(monkeypatch) -> None:
    from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer

    with ThreadedFakeLLMServer() as server:
        server.script(
            FakeReply(tool_calls=[("submit_router", {"path": "direct", "reason": "one date sum"})]),
            FakeReply(tool_calls=[("days_between", {"start": "2026-01-01", "end": "2026-02-01"})]),
            FakeReply(tool_calls=[("finish", {"result": "31 days."})]),
        )
        monkeypatch.setenv("CARAMBA_LLM__MODEL", "openai/fake-model")
        monkeypatch.setenv("CARAMBA_LLM__API_BASE", server.base_url)
        monkeypatch.setenv("COLUMNS", "200")
        result = runner.invoke(app, ["run", "How many days in January 2026?"])
    assert result.exit_code == 0, result.output
    assert "direct: one date sum" in result.output
    assert "✓ Caramba days_between(" in result.output and "31 days." in result.output
    assert "embedded mode" in result.output
    assert len(server.requests) == 3


def test_run_plans_shows_the_card_and_runs_the_approved_cohort(monkeypatch) -> None:
    from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer

    design = {
        "steps": [{"title": "Add the numbers", "tools": ["calculate"]}],
        "agents": [{"name": "Orchestrator", "role": "orchestrator", "tools": ["calculate"]}],
    }
    with ThreadedFakeLLMServer() as server:
        server.script(
            FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "a plan"})]),
            FakeReply(tool_calls=[("submit_planner", design)]),
            FakeReply(content="Add the numbers with calculate, then finish."),
            FakeReply(content="LGTM"),
            FakeReply(tool_calls=[("calculate", {"expression": "2+2"})]),
            FakeReply(tool_calls=[("finish", {"result": "It is 4."})]),
        )
        monkeypatch.setenv("CARAMBA_LLM__MODEL", "openai/fake-model")
        monkeypatch.setenv("CARAMBA_LLM__API_BASE", server.base_url)
        monkeypatch.setenv("COLUMNS", "200")
        monkeypatch.setenv("LOGNAME", "ana")
        result = runner.invoke(app, ["run", "--yes", "What is 2+2, carefully?"])
    assert result.exit_code == 0, result.output
    assert "Proposal for ana" in result.output and "Add the numbers" in result.output
    assert "Approved by ana." in result.output and "It is 4." in result.output


def test_cohort_demo_runs_a_competition_offline() -> None:
    result = runner.invoke(app, ["demo", "--cohort"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    for name in ("Team Exact", "Team Rough", "Judge"):
        assert f"+ {name}" in out and f"■ {name} finished" in out
    assert "✉ Orchestrator → Judge: Candidate A" in out
    assert "Winner — Candidate A: 366 * 24 * 60 * 60 = 31622400" in out
