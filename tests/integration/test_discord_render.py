"""Discord's look for the chat layer, without a server: the card is a Components V2 layout
within Discord's limits however big the proposal (checked as the fake Discord checks a
message), text is escaped, long text split at 2,000."""

from __future__ import annotations

from typing import Any

import discord

from bots.chat.ports import Card, Milestone, Result, StatusLine
from bots.discord.card import decided_layout, proposal_layout
from bots.discord.renderer import DiscordRenderer
from bots.discord.text import MESSAGE_LIMIT
from bots.discord.transport import _parts
from core.runs.approval import AgentCard, ProposalView
from core.types.run import RunBudget, RunStatus
from tests.fakes import discord_limits as limits


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


def sent(text: str, payload: Any) -> dict:
    """The JSON body discord.py sends for a rendered message, through the transport."""
    params = discord.http.handle_message_parameters(**_parts(text, payload))
    return dict(params.payload or {})


def message(payload: dict) -> dict:
    """The body of a layout payload: Components V2 (flag set by discord.py)."""
    body = sent("", payload)
    assert body["flags"] & limits.COMPONENTS_V2 and not body.get("content")
    return body


def texts(body: dict) -> list[str]:
    every = limits.v2_components(body["components"])
    return [c["content"] for c in every if c["type"] == limits.TEXT_DISPLAY]


def test_the_card_fits_discords_limits_whatever_its_size() -> None:
    for agents in (0, 1, 5, 9, 10, 30):
        for buttons in ("card", "none"):
            layout = proposal_layout(big_view(agents))
            payload = {"layout": layout, "buttons": buttons, "run": "run_0123456789"}
            body = message(payload | {"link": "https://caramba.example/runs/run_0123456789"})
            assert limits.check_message(body, 0, creating=True) is None, (agents, buttons)
            assert len(limits.v2_components(body["components"])) <= 40
            assert sum(map(len, texts(body))) <= 4000
        if agents > 9:
            assert f"… and {agents - 9} more agents" in "\n".join(texts(body))
    small = "\n".join(texts(message({"layout": proposal_layout(big_view(2)), "run": "run_1"})))
    assert "@\u200beveryone" in small and "\\*\\*offsite\\*\\*" in small
    assert "Agent 1" in small and "run\\_code: runs code" in small


def test_each_agent_has_its_edit_button_and_a_decided_card_has_none() -> None:
    view = big_view(3)
    body = message({"layout": proposal_layout(view), "buttons": "card", "run": view.run_id})
    (container,) = body["components"]
    assert container["type"] == limits.CONTAINER
    sections = [c for c in container["components"] if c["type"] == limits.SECTION]
    assert [s["accessory"]["custom_id"] for s in sections] == [
        f"caramba:agent:{view.run_id}:a{i}" for i in range(3)
    ]
    row = container["components"][-1]
    assert [b["label"] for b in row["components"]] == ["Approve", "Edit", "Reject"]
    decided = decided_layout(view, "**Approved by Bob.**")
    body = message({"layout": decided, "buttons": "none", "run": view.run_id})
    assert limits.check_message(body, 0, creating=False) is None
    every = limits.v2_components(body["components"])
    assert not [c for c in every if c.get("custom_id")]
    assert "**Approved by Bob.**" in texts(body)


def test_the_renderer_escapes_splits_and_adds_buttons() -> None:
    r = DiscordRenderer()
    (card,) = r.render(Card(view=big_view(3)))
    assert isinstance(card.payload, dict) and card.payload["buttons"] == "card"
    assert card.payload["layout"]["blocks"][0]["text"].startswith("### Proposal:")
    pieces = r.render(Milestone("Scout", "finished", "@here " + "z" * 5000))
    assert len(pieces) == 3 and all(len(p.text) <= MESSAGE_LIMIT for p in pieces)
    assert "@\u200bhere" in pieces[0].text
    result = r.render(Result("run_1", RunStatus.COMPLETED, "w" * 4100, rateable=True))
    assert all(len(p.text) <= MESSAGE_LIMIT for p in result)
    # 👍/👎 and "Run this every…" (bots.discord.schedule_items) under the last piece.
    assert result[-1].payload == {"rate": "run_1", "every": "run_1"}
    assert result[0].payload is None
    running = StatusLine("run_1", "running", 2, 1, 3, "Scout", "used", "calculate", running=True)
    (status,) = r.render(running)
    assert status.payload == {"buttons": "cancel", "run": "run_1"}
    assert "**Scout** used `calculate`" in status.text
