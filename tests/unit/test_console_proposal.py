"""The console's proposal prompt: readable choices, and an edit of an agent's budget."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from bots.console import proposal
from core.runs.approval import AgentCard, ProposalView
from core.runs.edits import Edit
from core.types.run import RunStatus


def _view() -> ProposalView:
    agent = AgentCard(
        id="agt_1",
        name="Analyst",
        role="orchestrator",
        parent=None,
        model="openai/x",
        tools=("finish",),
        prompt_excerpt="Analyse.",
        max_tokens=None,
        max_cost_usd=None,
    )
    return ProposalView(
        run_id="run_1",
        task="t",
        requested_by="ana",
        status=RunStatus.PROPOSED,
        steps=(),
        agents=(agent,),
        patterns=(),
        reused=(),
        budget=None,
        expires_at=None,
        decided_by=None,
    )


def test_the_choices_are_printed_with_their_brackets_and_a_budget_can_be_edited(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(["e", "1", "n", "", "", "", "500", "", "20000", "1.5"])
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(answers) + "\n"))

    decision = proposal.ask(console, _view())

    printed = out.getvalue()
    assert "[a]pprove, [e]dit or [r]eject [a/e/r]" in printed
    assert "Not a budget: max_tokens" in printed  # 500 is under the 1000 minimum
    assert isinstance(decision, Edit)
    (change,) = decision.agents
    assert (change.max_tokens, change.max_cost_usd) == (20000, 1.5)
