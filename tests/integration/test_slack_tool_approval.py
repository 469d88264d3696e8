"""A tool call waiting for approval, from Slack (signed requests into the app, the fake
Slack Web API, real Redis, the scripted model): the agent's write_file waits for a click
in the thread (the tool in plain words, the secret in its arguments masked, the agent's
reason); an outsider's click is refused in private (their Deny form too, naming who may
decide); Deny opens a form whose reason the agent reads as the call's result; Approve
once runs the call once and the run completes; each decided message says who decided,
without its buttons."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import httpx
import pytest

from core.types.run import RunStatus
from tests.integration.approval_run import DENIAL, DONE, REASON, SECRET, TASK, asking, told
from tests.integration.approval_run import writer as writer_model
from tests.integration.slack_harness import FORM, click_button, slack_harness
from tests.integration.test_slack_http import (
    ANA,
    MALLORY,
    Harness,
)

pytestmark = pytest.mark.integration
NAME = "Ana"


def harness(make_services: Any, redis: Any, model: Any) -> Any:
    return slack_harness(make_services, redis, model, configure=asking, users={ANA: NAME})


def requests_posted(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.slack.of("chat.postMessage") if "caramba_tool_once" in json.dumps(c)]


async def nth_request(h: Harness, n: int) -> dict[str, Any]:
    await h.slack.wait_for(lambda: len(requests_posted(h)) >= n, timeout_s=20)
    return requests_posted(h)[n - 1]


async def click(h: Harness, action_id: str, message: dict[str, Any], user: str, ts: str) -> Any:
    """``user`` clicks the request's button ``action_id``, as Slack sends it."""
    block_id = message["blocks"][-1]["block_id"]
    return await click_button(h, message, action_id, user, ts, block_id=block_id)


async def deny(h: Harness, user: str, reason: str) -> httpx.Response:
    """Submit the Deny form the bot opened last, as ``user``, with ``reason``."""
    form = h.slack.of("views.open")[-1]["view"]
    form = json.loads(form) if isinstance(form, str) else form
    values = {"reason": {"text": {"type": "plain_text_input", "value": reason}}}
    payload = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "trigger_id": "trig",
        "view": {**form, "id": "V1", "state": {"values": values}},
    }
    return await h.post("payload=" + urllib.parse.quote(json.dumps(payload)), FORM)


def refusals(h: Harness) -> list[str]:
    return [e["text"] for e in h.slack.of("chat.postEphemeral")]


def edited(h: Harness, ts: str) -> dict[str, Any]:
    return next(u for u in reversed(h.slack.of("chat.update")) if u["ts"] == ts)


async def test_a_write_waits_is_denied_then_approved_once_and_the_run_completes(
    make_services, real_redis
) -> None:
    model = writer_model()
    async with harness(make_services, real_redis, model) as h:
        await h.mention(TASK)
        card, run_id = await h.card()
        assert "write_file: changes things, asks a person before each call" in json.dumps(
            card["blocks"]
        )
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")

        first = await nth_request(h, 1)
        text = json.dumps(first["blocks"], ensure_ascii=False)
        assert first["thread_ts"] == "1700000000.000100"
        assert "Writer wants to use write_file" in text and REASON in text
        assert SECRET not in text and "••••" in text
        buttons = [b["text"]["text"] for b in first["blocks"][-1]["elements"]]
        assert buttons == ["Approve once", "Approve for this run", "Deny"]
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.WAITING_HUMAN

        await click(h, "caramba_tool_once", first, MALLORY, "1700000000.000301")
        await h.slack.wait_for(lambda: bool(refusals(h)))
        assert refusals(h)[0].startswith("Only <@UANA>, who asked")

        await click(h, "caramba_tool_deny", first, MALLORY, "1700000000.000301")
        await h.slack.wait_for(lambda: bool(h.slack.of("views.open")))
        refused = (await deny(h, MALLORY, "I say no")).json()
        assert refused["response_action"] == "errors"
        assert refused["errors"]["reason"].startswith(f"Only {NAME}, who asked")

        await click(h, "caramba_tool_deny", first, ANA, "1700000000.000301")
        await h.slack.wait_for(lambda: len(h.slack.of("views.open")) == 2)
        assert (await deny(h, ANA, DENIAL)).status_code == 200
        await h.slack.wait_for(lambda: any(u["ts"] == "1700000000.000301"
                                           for u in h.slack.of("chat.update")))  # fmt: skip
        said = edited(h, "1700000000.000301")
        assert f"Denied by <@{ANA}>: {DENIAL}" in json.dumps(said["blocks"])
        assert "caramba_tool_once" not in json.dumps(said["blocks"])

        second = await nth_request(h, 2)
        print("Writer read:", told(model)[0])
        assert told(model)[0].startswith(f"Denied by {NAME}: {DENIAL}.")
        await click(h, "caramba_tool_once", second, ANA, "1700000000.000302")
        await h.runs_end()
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE
        assert f"Approved once by <@{ANA}>" in json.dumps(edited(h, "1700000000.000302")["blocks"])
        assert "outputs/report.md" in told(model)[-1]
        written = await h.bot.svc.workspace.read(run_id, "outputs/report.md")
        assert SECRET.encode() in written  # the call ran as the agent wrote it, once
