"""A planner's budget as people read it (issue 22): exact on every card and in every
pause, a budget below a cent too (``$0.0004``, not "under $0.01", nor Discord's
``$0.00``)."""

from __future__ import annotations

import json

from bots.chat.intentions import Paused
from bots.chat.pause import pause_text
from bots.discord.card import budget_line
from bots.slack.blocks import proposal_blocks
from core.runs.approval import ProposalView
from core.types.figures import exact_cost
from core.types.run import RunBudget, RunStatus


def test_exact_cost_keeps_two_significant_figures_below_a_cent() -> None:
    figures = [exact_cost(v) for v in (0, 0.0004, 0.0012, 0.03, 0.5, 1204)]
    assert figures == ["$0", "$0.0004", "$0.0012", "$0.03", "$0.50", "$1,204.00"]


def card(usd: float) -> ProposalView:
    return ProposalView(
        run_id="run_1",
        task="Add up",
        requested_by="ana",
        status=RunStatus.PROPOSED,
        steps=("Add up",),
        agents=(),
        patterns=(),
        reused=(),
        budget=RunBudget(tokens=20_000, cost_usd=usd, wall_clock_s=1800),
        expires_at=None,
        decided_by=None,
    )


def test_the_cards_show_a_tiny_budget_as_it_is() -> None:
    slack = json.dumps([b.to_dict() for b in proposal_blocks(card(0.0004))], ensure_ascii=False)
    assert "Budget: 20,000 tokens · $0.0004 · 1800 s" in slack
    assert budget_line(card(0.0004)).startswith("Budget: 20,000 tokens · $0.0004 · 1800 s")


def test_the_pause_says_what_was_spent_against_a_tiny_budget() -> None:
    paused = Paused(run_id="run_1", what="cost", detail="", cost_usd=0.0012, limit_cost_usd=0.0004)
    assert pause_text(paused).startswith(
        "⏸ Paused at its budget: the run spent $0.0012 of $0.0004."
    )
