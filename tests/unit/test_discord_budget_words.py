"""``/caramba task:budget …`` read as Slack's ``/caramba budget …`` (bots/discord/spend.py):
amounts, the server's scope, an owner by mention or id; anything else stays a task."""

from __future__ import annotations

import pytest

from bots.discord.spend import BudgetWords, budget_words


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("budget", BudgetWords()),
        ("  Budget  ", BudgetWords()),
        ("budget $50", BudgetWords(usd=50.0)),
        ("budget 1,250.50", BudgetWords(usd=1250.5)),
        ("budget server $500", BudgetWords(usd=500.0, scope="server")),
        ("budget workspace 5 channel", BudgetWords(usd=5.0, scope="channel")),
        ("budget $50 owner <@1234>", BudgetWords(usd=50.0, owner="<@1234>")),
        ("budget $50 owner <@!1234>", BudgetWords(usd=50.0, owner="<@!1234>")),
    ],
)
def test_budget_words(text: str, said: BudgetWords) -> None:
    assert budget_words(text) == said


@pytest.mark.parametrize(
    "text",
    [
        "",
        "budget our offsite in Lisbon",
        "budgets",
        "plan a budget",
        "budget $5O",
        "budget $0.001",
        "budget -5",
        "budget $50 owner",
        "budget $50 owner @ana",
        "budget $1e9",
        "budget <script>",
    ],
)
def test_anything_else_stays_a_task(text: str) -> None:
    assert budget_words(text) is None
