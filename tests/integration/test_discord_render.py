"""Discord's look for the chat layer, without a server: the card stays within Discord's
embed limits however big the proposal, text is escaped, long text split at 2,000."""

from __future__ import annotations

import discord

from bots.chat.ports import Card, Milestone, Result, StatusLine
from bots.discord.card import FIELDS, TOTAL_LIMIT, proposal_embed
from bots.discord.renderer import DiscordRenderer
from bots.discord.text import MESSAGE_LIMIT
from core.runs.approval import AgentCard, ProposalView
from core.types.run import RunBudget, RunStatus


def big_view(agents: int) -> ProposalView:
    return ProposalView(
        run_id="run_0123456789",
        task="Plan @everyone's **offsite** " + "x" * 500,
        requested_by="42",
        status=RunStatus.PROPOSED,
        steps=tuple(f"Step {i}: " + "y" * 300 for i in range(20)),
        agents=tuple(
            AgentCard(
                id=f"a{i}",
                name=f"Agent {i} " + "n" * 100,
                role="member",
                parent="Lead",
                model="openai/gpt-4o-mini",
                tools=("calculate", "web_search", "run_code"),
                risks=("web_search: reaches the internet", "run_code: runs code"),
                prompt_excerpt="p" * 300,
                max_tokens=50_000,
                max_cost_usd=1.5,
            )
            for i in range(agents)
        ),
        patterns=("Lead: fan_out",),
        reused=("agent Scout (similarity 0.91; 3/3 runs succeeded, 2 approvals)",),
        budget=RunBudget(tokens=200_000, cost_usd=2.0, wall_clock_s=900),
        expires_at=None,
        decided_by=None,
    )


def test_the_card_fits_discords_limits_whatever_its_size() -> None:
    for agents in (1, 5, 30):
        embed = proposal_embed(big_view(agents))
        assert len(embed) <= TOTAL_LIMIT and len(embed.fields) <= FIELDS
        assert all(len(f.value or "") <= 1024 for f in embed.fields)
    small = proposal_embed(big_view(2))
    assert "@\u200beveryone" in (small.description or "")
    assert "\\*\\*offsite\\*\\*" in (small.description or "")
    assert "Agent 1" in small.fields[1].name and "run\\_code: runs code" in small.fields[1].value


def test_the_renderer_escapes_splits_and_adds_buttons() -> None:
    r = DiscordRenderer()
    (card,) = r.render(Card(view=big_view(3)))
    assert isinstance(card.payload, dict) and card.payload["buttons"] == "card"
    assert discord.Embed.from_dict(card.payload["embeds"][0]).title.startswith("Proposal:")
    pieces = r.render(Milestone("Scout", "finished", "@here " + "z" * 5000))
    assert len(pieces) == 3 and all(len(p.text) <= MESSAGE_LIMIT for p in pieces)
    assert "@\u200bhere" in pieces[0].text
    result = r.render(Result("run_1", RunStatus.COMPLETED, "w" * 4100, rateable=True))
    assert all(len(p.text) <= MESSAGE_LIMIT for p in result)
    assert result[-1].payload == {"rate": "run_1"} and result[0].payload is None
    running = StatusLine("run_1", "running", 2, 1, 3, "Scout", "used", "calculate", running=True)
    (status,) = r.render(running)
    assert status.payload == {"buttons": "cancel", "run": "run_1"}
    assert "**Scout** used `calculate`" in status.text
