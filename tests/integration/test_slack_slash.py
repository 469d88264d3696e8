"""``/caramba <task>`` (issue 14): Slack's slash command request, signed and form-encoded
as Slack sends it, into the served bot; answered at once, then the same flow as a mention
in the thread of a message saying who asked. Against the Slack fake, real Redis."""

from __future__ import annotations

import time
import urllib.parse
from typing import Any

import httpx
import pytest

from bots.slack.slash import HELP, INVITE
from core.types.run import RunStatus
from tests.integration.test_slack_http import ANA, CHANNEL, Harness, harness

pytestmark = pytest.mark.integration
ANA_USER = {"id": ANA, "name": "ana", "profile": {"display_name": "Ana <b>", "real_name": "A"}}


async def slash(h: Harness, text: str, channel: str = CHANNEL) -> tuple[httpx.Response, float]:
    """Send ``/caramba text`` as Slack does; its answer and how long it took (s). The
    command's response_url is on the fake, recorded as calls of ``response_url``."""
    form = {
        "token": "legacy",
        "team_id": "T1",
        "team_domain": "example",
        "channel_id": channel,
        "channel_name": "general",
        "user_id": ANA,
        "user_name": "ana",
        "command": "/caramba",
        "text": text,
        "api_app_id": "A1",
        "response_url": f"{h.slack.url}response_url",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    }
    started = time.monotonic()
    resp = await h.post(urllib.parse.urlencode(form), "application/x-www-form-urlencoded")
    return resp, time.monotonic() - started


def posts(h: Harness) -> list[dict[str, Any]]:
    return h.slack.of("chat.postMessage")


async def test_a_slash_command_runs_in_the_thread_of_who_asked(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.users[ANA] = ANA_USER
        resp, took = await slash(h, "Compare the three cheapest flights to Berlin & back @here")
        assert resp.status_code == 200 and took < 3, "acknowledged within Slack's 3 s"
        assert resp.text == "", "nothing shown for the command itself"

        card, run_id = await h.card()
        first = posts(h)[0]
        assert "thread_ts" not in first, "a new message in the channel"
        assert first["channel"] == CHANNEL
        assert first["text"] == (
            "Ana &lt;b&gt; asked: Compare the three cheapest flights to Berlin &amp; back "
            "@\u2060here"
        )
        # The card is in the thread of that first message (the fake numbers the ts it
        # hands out: the first message's ends in 000001).
        thread = card["thread_ts"]
        assert thread.endswith(".000001") and posts(h).index(card) > 0
        run = await h.bot.svc.store.get_run(run_id)
        assert run.task == "Compare the three cheapest flights to Berlin & back @here"
        assert run.requested_by == ANA
        assert await h.bot.threads.run_in(CHANNEL, thread) == run_id
        assert h.slack.of("reactions.add") == [], "no mention to react to"

        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.COMPLETED
        after = posts(h)[1:]
        assert all(c["thread_ts"] == thread for c in after), "everything in that thread"
        assert "Orchestrator says: 3 flights" in after[-1]["text"]
        assert "Run completed" in h.slack.of("chat.update")[-1]["text"]
        assert h.slack.of("response_url") == []


async def test_an_empty_slash_command_gets_the_help(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        resp, took = await slash(h, "   ")
        assert resp.status_code == 200 and took < 3
        assert resp.text == HELP, "an answer with text: shown to the person only"
        await h.bot.drain()
        assert posts(h) == [] and not h.bot.relays


async def test_a_channel_without_the_bot_gets_an_invite_hint(make_services, real_redis) -> None:
    def not_in(method: str, args: dict[str, Any]) -> str | None:
        return (
            "not_in_channel" if method == "chat.postMessage" and args["channel"] == "C2" else None
        )

    async with harness(make_services, real_redis) as h:
        h.slack.refusing = not_in
        resp, took = await slash(h, "Compare flights to Berlin.", channel="C2")
        assert resp.status_code == 200 and took < 3
        await h.slack.wait_for(lambda: bool(h.slack.of("response_url")))
        await h.bot.drain()
        (hint,) = h.slack.of("response_url")
        assert hint["text"] == INVITE and "/invite @caramba" in hint["text"]
        assert hint["response_type"] == "ephemeral"
        assert not h.bot.relays and h.cards() == []
        assert h.slack.of("chat.postEphemeral") == []
