"""Every Slack message and view the bot sends, against Block Kit's limits: built from
hostile inputs (long texts, many agents, fields and runs, markup and broadcasts), each
payload is parsed back into slack_sdk's models (their own validators), then checked for
the limits they do not enforce: blocks per message (50) and per view (100), text
lengths, unique action and block ids, and no broadcast or raw mention anywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bots.chat.approvals import ToolApproval
from bots.chat.intentions import Form, Paused
from bots.chat.ports import (
    Artifacts,
    Card,
    ChatPost,
    Intention,
    Milestone,
    Note,
    Notify,
    OutFile,
    Question,
    Result,
    StatusLine,
)
from bots.chat.tasks import AgentTask
from bots.slack.approvals import deny_form
from bots.slack.blocks import outcome_blocks
from bots.slack.edit import edit_view
from bots.slack.forms import form_view
from bots.slack.home import home_view
from bots.slack.overview import RunLine, SavedCohort, Spend
from bots.slack.render import SlackRenderer
from core.types.agent import AgentSpec
from core.types.forms import FormField
from core.types.run import RunStatus
from tests.unit.test_slack_blocks import _view

R = "run_1"
LONG = " <!channel> <@U0EVE1> @here & *b* " + "word " * 3000
# Names (agents, tools, servers) are short in life; still hostile here.
NAME = "Ana <!channel> <@U0EVE1> @here & " + "x" * 300
MESSAGE_BLOCKS, VIEW_BLOCKS = 50, 100
# Characters per field, as Slack documents them.
LIMITS = {
    "section": 3000,
    "header": 150,
    "markdown": 12_000,
    "button": 75,
    "label": 2000,
    "context": 10,
    "actions": 25,
}


def fields(n: int) -> tuple[FormField, ...]:
    return tuple(
        FormField(name=f"f{i}{'x' * 300}", label=f"Field {i}{NAME}", kind="text", required=True)
        for i in range(n)
    )


def intentions() -> list[Intention]:
    tasks = tuple(AgentTask(f"agt_{i}", f"Agent {i}{NAME}", "in_progress", LONG) for i in range(60))
    return [
        StatusLine(
            run_id=R,
            phase="running",
            agents=60,
            who=LONG,
            doing="used",
            tool=LONG,
            running=True,
            link="https://caramba.example.com/runs/1",
            tasks=tasks,
        ),
        StatusLine(run_id=R, phase="ended", outcome="completed", tokens=10**9, tasks=tasks),
        Card(_view(80, LONG), link="https://caramba.example.com/runs/1"),
        Milestone(agent=NAME, reason="finished", text=LONG),
        Question(agent=NAME, text=LONG),
        Note(text=LONG, level="warning"),
        Notify(agent=NAME, who="@ana", text=LONG),
        ChatPost(agent=NAME, text=LONG, filename="notes.md"),
        Result(run_id=R, status=RunStatus.COMPLETED, text=LONG * 3, rateable=True),
        Result(run_id=R, status=RunStatus.COMPLETED, text=LONG, rateable=True, streamed=True),
        Result(run_id=R, status=RunStatus.COMPLETED, text=LONG, rateable=True, file="result.md"),
        Result(run_id=R, status=RunStatus.FAILED, text=LONG),
        Artifacts(
            run_id=R, files=(OutFile(path="outputs/a.md", filename="a.md", title="a", size=3),)
        ),
        Paused(
            run_id=R,
            what="cost",
            detail=LONG,
            cost_usd=2.0,
            limit_cost_usd=1.5,
            extend_cost_usd=2.0,
        ),
        Form(run_id=R, form_id="form_1", agent=NAME, server=NAME, message=LONG, fields=fields(40)),
        Form(
            run_id=R,
            form_id="form_2",
            agent=NAME,
            server=NAME,
            message=LONG,
            url="https://shop.example.com/pay",
        ),
        ToolApproval(
            run_id=R,
            approval_id="a-1",
            agent=NAME,
            tool="files__delete",
            purpose=LONG,
            arguments=json.dumps({"path": LONG}),
            reason=LONG,
            risks=(LONG,) * 10,
        ),
    ]


def mrkdwn(value: Any) -> list[str]:
    """Every mrkdwn text in a payload (where a mention or a broadcast would work)."""
    if isinstance(value, list):
        return [t for v in value for t in mrkdwn(v)]
    if not isinstance(value, dict):
        return []
    own = [value["text"]] if value.get("type") == "mrkdwn" else []
    return own + [t for v in value.values() for t in mrkdwn(v)]


def check_blocks(blocks: list[dict[str, Any]], most: int) -> None:
    assert 0 < len(blocks) <= most, len(blocks)
    # slack_sdk's own validators (lengths it knows) on the payload as sent.
    for parsed in Block.parse_all(blocks):
        assert parsed is not None
        parsed.to_dict()
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    assert len(block_ids) == len(set(block_ids)), "block ids unique"
    # Buttons are told apart by action id in the whole message (the listeners route by
    # it); an input's is unique in its block (Slack's rule; values come by block id).
    action_ids = [
        e["action_id"]
        for b in blocks
        if b["type"] != "input"
        for e in [*b.get("elements", []), b.get("accessory") or {}]
        if isinstance(e, dict) and "action_id" in e
    ]
    assert len(action_ids) == len(set(action_ids)), f"action ids unique: {action_ids}"
    inputs = [(b["block_id"], b["element"]["action_id"]) for b in blocks if b["type"] == "input"]
    assert len(inputs) == len(set(inputs))
    assert all(len(a) <= 255 for a in action_ids + block_ids)
    for b in blocks:
        kind = b["type"]
        if kind == "section":
            assert len(b["text"]["text"]) <= LIMITS["section"]
        elif kind == "header":
            assert len(b["text"]["text"]) <= LIMITS["header"]
        elif kind == "markdown":
            assert len(b["text"]) <= LIMITS["markdown"]
        elif kind == "context":
            assert len(b["elements"]) <= LIMITS["context"]
        elif kind == "actions":
            assert len(b["elements"]) <= LIMITS["actions"]
            for e in b["elements"]:
                if e["type"] == "button":
                    assert len(e["text"]["text"]) <= LIMITS["button"]
                    assert len(e.get("value", "")) <= 2000
        elif kind == "input":
            assert len(b["label"]["text"]) <= LIMITS["label"]


def check_safe(payload: Any) -> None:
    raw = json.dumps(payload, ensure_ascii=False)
    for ping in ("<!channel>", "<!here>", "<!everyone>", "<@U0EVE1>"):
        assert ping not in raw, ping
    assert "&lt;@U0EVE1&gt;" not in raw, "a mention shown as a raw, escaped id"


@pytest.mark.parametrize("intention", intentions(), ids=lambda i: type(i).__name__)
def test_every_message_fits_block_kit(intention: Intention) -> None:
    for message in SlackRenderer().render(intention):
        assert len(message.text) <= 40_000, "chat.postMessage's text"
        check_safe({"text": message.text, "payload": message.payload})
        payload = message.payload
        blocks = payload.get("blocks") if isinstance(payload, dict) else payload
        if blocks:
            check_blocks(blocks, MESSAGE_BLOCKS)
        if isinstance(payload, dict) and "progress" in payload:
            progress = payload["progress"]
            assert len(progress["tasks"]) == 60, "one task per agent"
            assert all(
                len(t["title"]) <= 120 and len(t["details"] or "") <= 250 for t in progress["tasks"]
            )


def test_a_decided_card_fits() -> None:
    blocks = [b.to_dict() for b in outcome_blocks(_view(80, LONG), "Approved by Ana")]
    check_blocks(blocks, MESSAGE_BLOCKS)
    check_safe(blocks)


def test_every_view_fits_block_kit() -> None:
    runs = [RunLine(f"run_{i}", LONG, "completed", "UANA", 1.8e9, 10**7, 12.5) for i in range(8)]
    cohorts = [SavedCohort(LONG, LONG, 3) for _ in range(8)]
    agents = [AgentSpec(name=f"Agent {i}{LONG[:200]}", system_prompt=LONG) for i in range(30)]
    views = [
        home_view(runs, cohorts, Spend(1.8e9, 500, 10**9, 12345.678)),
        form_view(fields(200), LONG, LONG, {"run": R}),
        deny_form({"run": R, "approval": "a-1"}),
        edit_view(agents, [f"tool_{i}" for i in range(300)], {"run": R}),
    ]
    for view in views:
        d = view.to_dict()  # slack_sdk's validators: title, callback id, metadata
        check_blocks(d["blocks"], VIEW_BLOCKS)
        # Plain-text labels of a modal only its viewer sees cannot notify anyone.
        check_safe(mrkdwn(d) if d["type"] == "modal" else d)
        if d["type"] == "modal":
            assert len(d["title"]["text"]) <= 24
            assert len(d.get("private_metadata", "")) <= 3000
