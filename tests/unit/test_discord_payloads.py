"""Every message and form the Discord bot sends, as discord.py sends it (renderer →
transport → ``handle_message_parameters``), checked against Discord's limits as the fake
Discord checks them (tests/fakes/discord_limits.py): content, embeds, action rows, and for
Components V2 messages the flag, ≤ 40 components with nested ones, ≤ 4,000 characters of
text, no content or embeds beside them. Big and hostile inputs on purpose."""

from __future__ import annotations

from typing import Any

import discord
import pytest

from bots.chat.intentions import (
    Artifacts,
    Card,
    ChatPost,
    Form,
    Milestone,
    Note,
    Notify,
    OutFile,
    Paused,
    Question,
    Result,
    StatusLine,
    ToolApproval,
)
from bots.discord.card import decided_layout, edited_layout
from bots.discord.edit import EditModal
from bots.discord.forms import FormModal
from bots.discord.renderer import DiscordRenderer
from bots.discord.replies import ReplyModal
from bots.discord.tool_approvals import DenyModal
from bots.discord.transport import _parts
from bots.discord.views import pick_view
from core.types.agent import AgentSpec, Budget
from core.types.forms import FormField, Option
from core.types.run import RunStatus
from tests.fakes import discord_limits as limits
from tests.integration.test_discord_render import big_view

RUN = "run_0123456789"
LONG = "@everyone **bold** <@123> " + "z" * 9000
FIELDS = (
    FormField(name="city", label="City " + "c" * 60, kind="text", description="d" * 200),
    FormField(
        name="pick",
        label="Pick",
        kind="choices",
        options=tuple(Option(value=f"v{i}", label="o" * 120) for i in range(40)),
    ),
    FormField(name="ok", label="OK?", kind="boolean", default=True),
)
INTENTIONS: list[Any] = [
    StatusLine(RUN, "starting", link="https://caramba.example/runs/" + RUN),
    StatusLine(RUN, "running", 30, 3, 12, "Scout " * 50, LONG, "web_search", running=True),
    StatusLine(RUN, "ended", 30, 30, 99, outcome="completed", tokens=1_000_000, cost_usd=2),
    Card(big_view(1)),
    Card(big_view(40), link="https://caramba.example/runs/" + RUN),
    Milestone("Scout", "finished", LONG),
    Question("Scout", LONG),
    Note(LONG, "error"),
    Notify("Scout", "Alice", LONG),
    ChatPost("Scout", LONG),
    ChatPost("Scout", "", filename="report.md"),
    Result(RUN, RunStatus.COMPLETED, LONG, rateable=True),
    Result(RUN, RunStatus.FAILED, LONG, file="result.md"),
    Artifacts(RUN, (OutFile(path="outputs/a.md", filename="a.md", title="A", size=10),)),
    Paused(RUN, "tokens", LONG, tokens=1_200_000, limit_tokens=1_000_000, extend_tokens=100_000),
    Paused(RUN, "cost", "", cost_usd=4.08, limit_cost_usd=3.0, extend_cost_usd=2.0),
    Form(RUN, "form_1", "Scout", "server", LONG, FIELDS),
    Form(RUN, "form_2", "Scout", "server", LONG, url="https://example.com/" + "u" * 600),
    ToolApproval(RUN, "a-1", "Writer", "write_file", LONG, '{"x": "' + "y" * 9000 + '"}', LONG),
]


def sent(text: str, payload: Any) -> dict[str, Any]:
    params = discord.http.handle_message_parameters(**_parts(text, payload))
    return dict(params.payload or {})


@pytest.mark.parametrize("intention", INTENTIONS, ids=lambda i: type(i).__name__)
def test_every_message_the_renderer_makes_is_within_discords_limits(intention: Any) -> None:
    for rendered in DiscordRenderer().render(intention):
        body = sent(rendered.text, rendered.payload)
        assert limits.check_message(body, 0, creating=True) is None, body
        if int(body.get("flags") or 0) & limits.COMPONENTS_V2:
            every = limits.v2_components(body["components"])
            assert len(every) <= 40 and not body.get("content") and not body.get("embeds")


def test_the_card_pause_and_tool_request_are_components_v2() -> None:
    renderer = DiscordRenderer()
    for intention in (INTENTIONS[3], INTENTIONS[14], INTENTIONS[18]):
        (rendered,) = renderer.render(intention)
        assert sent(rendered.text, rendered.payload)["flags"] & limits.COMPONENTS_V2


def test_a_decided_or_edited_card_is_within_the_limits() -> None:
    for agents in (1, 9, 40):
        view = big_view(agents)
        note = "**Approved by " + "B" * 500 + ".**"
        for payload in (
            {"layout": decided_layout(view, note), "buttons": "none", "run": RUN},
            {"layout": edited_layout(view, "E" * 300), "buttons": "card", "run": RUN},
        ):
            assert limits.check_message(sent("", payload), 0, creating=False) is None


def test_the_forms_are_within_the_modal_limits() -> None:
    many = [f"tool_{i}" for i in range(60)]
    agent = AgentSpec(
        name="N" * 90,
        role="member",
        description="d" * 5000,
        tools=("calculate", "web_search"),
        model="openai/" + "m" * 120,
        budget=Budget(max_tokens=50_000, max_cost_usd=1.5),
    )
    edit = EditModal(RUN, 1, agent, [f"openai/m{i}" for i in range(40)], many)
    forms = (
        edit,
        DenyModal(RUN, "a-1"),
        FormModal(RUN, "f_1", "S" * 80, FIELDS),
        ReplyModal(RUN, 50),
    )
    for modal in forms:
        assert limits.check_modal(modal.to_dict()) is None, modal.to_dict()
    labels = [c for c in edit.to_dict()["components"] if c["type"] == limits.LABEL]
    assert [c["component"]["custom_id"] for c in labels] == ["model", "tools"]


def test_the_agent_picker_is_within_the_limits() -> None:
    agents = [(f"agt_{i}", "A" * 150) for i in range(40)]
    view = pick_view(RUN, 123, agents)
    body = sent("Which agent do you want to change?", {}) | {"components": view.to_components()}
    assert limits.check_message(body, 0, creating=True) is None
