"""A schedule made from Slack (issue 28): ``/caramba schedule add …`` signed as Slack
sends it, fired under a fake clock by two workers' services, each firing posted as a new
message in the channel with its run in the thread. The first firing of a task asks for
approval (the card); once approved, firings run without asking; an edit of the budget
asks again; ten minutes of downtime over a slot make one firing, not more."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any

import httpx
import pytest

from bots.slack.schedules import REPEAT
from core.runs import firings
from core.runs import schedules as people
from core.schedules.clock import FakeClock
from core.types.run import RunStatus
from tests.integration.test_slack_http import ANA, CHANNEL, MALLORY, Harness, harness
from tests.integration.test_slack_slash import ANA_USER, slash

pytestmark = pytest.mark.integration
MONDAY_8 = 1764576000.0  # Monday 1 December 2025, 08:00 UTC


def announcements(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.slack.of("chat.postMessage") if c["text"].startswith("Scheduled run")]


def results(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.slack.of("chat.postMessage") if "Orchestrator says" in c["text"]]


async def ephemeral(h: Harness, count: int) -> str:
    await h.slack.wait_for(lambda: len(h.slack.of("response_url")) >= count)
    return str(h.slack.of("response_url")[count - 1]["text"])


async def slash_as(h: Harness, user: str, text: str) -> None:
    """``/caramba text`` typed by ``user`` (signed as Slack sends it)."""
    form = {
        "team_id": "T1",
        "team_domain": "acme",
        "channel_id": CHANNEL,
        "channel_name": "ops",
        "user_id": user,
        "command": "/caramba",
        "text": text,
        "response_url": f"{h.slack.url}response_url",
        "trigger_id": "1.2.3",
    }
    resp = await h.post(urllib.parse.urlencode(form), "application/x-www-form-urlencoded")
    assert resp.status_code == 200


async def fire(h: Harness, other: Any, clock: FakeClock) -> int:
    """Both workers tick at once; how many firings they made."""
    return sum(
        await asyncio.gather(firings.fire_due(h.bot.svc, clock), firings.fire_due(other, clock))
    )


async def test_a_schedule_from_slack_fires_on_a_fake_clock(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.users[ANA] = ANA_USER
        other = make_services(h.bot.svc.settings, h.bot.svc.llm, redis=real_redis)
        h.bot.firings.start()
        clock = FakeClock(MONDAY_8)
        resp, took = await slash(h, "schedule add every blursday | Count the open tickets")
        assert resp.status_code == 200 and took < 3
        assert "“every blursday”" in await ephemeral(h, 1)
        await slash(h, "schedule add every day at 9:00 | Count the open tickets | $2 | UTC")
        said = await ephemeral(h, 2)
        assert said.startswith("Scheduled by Ana") and "$2.00 a firing" in said
        (made,) = (await people.listed(h.bot.svc, None)).schedules
        # Created with the system clock: moved to the fake clock's Monday for the test.
        await people.store(h.bot.svc).update(
            made.id, lambda s: s.model_copy(update={"next_at": MONDAY_8 + 3600})
        )

        # First firing: the task is planned and the card asks for approval.
        clock.at = MONDAY_8 + 3600
        assert await fire(h, other, clock) == 1
        card, run_id = await h.card()
        (first,) = announcements(h)
        assert not first.get("thread_ts") and first["channel"] == CHANNEL
        assert "waits for approval" in first["text"] and card["thread_ts"]
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()

        # Two more days: unchanged, they run without a card.
        for day in (1, 2):
            clock.at = MONDAY_8 + 3600 + day * 86400
            assert await fire(h, other, clock) == 1
            await h.slack.wait_for(lambda d=day: len(announcements(h)) == d + 1)
            await h.slack.wait_for(lambda d=day: len(results(h)) == d + 1, timeout_s=20)
        assert len(h.cards()) == 1, "no new approval while unchanged"
        assert all("running now" in a["text"] for a in announcements(h)[1:])
        assert len(results(h)) == 3, "three results in the channel"
        threads = {r["thread_ts"] for r in results(h)}
        assert len(threads) == 3 and card["thread_ts"] in threads, "a thread per firing"
        assert all(not a.get("thread_ts") for a in announcements(h)), "top-level messages"
        assert len(await firings.read_firings(h.bot.svc, "0-0")) == 3, "exactly three runs"

        # Mallory may not change it; Ana raises the budget and the next firing asks again.
        h.slack.users[MALLORY] = {"id": MALLORY, "name": "mal", "profile": {"display_name": "Mal"}}
        await slash_as(h, MALLORY, f"schedule edit {made.id} | budget 3")
        refusal = await ephemeral(h, 3)
        assert refusal.startswith("Only Ana &lt;b&gt;, who made this schedule"), refusal
        await slash_as(h, MALLORY, f"schedule delete {made.id}")
        assert "Only Ana" in await ephemeral(h, 4)
        await slash(h, f"schedule edit {made.id} | budget 3")
        assert "asks for approval again" in await ephemeral(h, 5)
        await slash(h, "schedule list")
        listed = await ephemeral(h, 6)
        assert made.id in listed and "$3.00 a firing" in listed
        clock.at = MONDAY_8 + 3600 + 3 * 86400
        assert await fire(h, other, clock) == 1
        await h.slack.wait_for(lambda: len(h.cards()) == 2)
        assert "waits for approval" in announcements(h)[-1]["text"]
        second = h.cards()[-1]
        run_id = second["blocks"][-1]["elements"][0]["value"]
        await h.click("caramba_approve", run_id, ANA, "1700000000.000300")
        await h.runs_end()

        # Ten minutes of downtime past the next slot: one firing on recovery.
        clock.at = MONDAY_8 + 3600 + 4 * 86400 + 600
        assert await fire(h, other, clock) == 1
        assert await fire(h, other, clock) == 0
        await h.slack.wait_for(lambda: len(results(h)) == 5, timeout_s=20)
        assert len(h.cards()) == 2
        await h.runs_end()
        ran = [f.run_id for _, f in await firings.read_firings(h.bot.svc, "0-0")]
        assert len(ran) == len(set(ran)) == 5
        for rid in ran:
            assert (await h.bot.svc.store.get_run(rid)).status is RunStatus.COMPLETED
        assert "Scheduled run" not in json.dumps(h.slack.of("chat.postEphemeral"))


async def submit_repeat(h: Harness, user: str, **typed: str) -> httpx.Response:
    """Submit the "Run this every…" form the bot opened last, as ``user``."""
    form = h.slack.of("views.open")[-1]["view"]
    form = json.loads(form) if isinstance(form, str) else form
    values = {k: {"text": {"type": "plain_text_input", "value": v}} for k, v in typed.items()}
    payload = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "trigger_id": "trig",
        "view": {**form, "id": "V1", "state": {"values": values}},
    }
    body = "payload=" + urllib.parse.quote(json.dumps(payload))
    return await h.post(body, "application/x-www-form-urlencoded")


async def test_run_this_every_on_a_finished_run(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.users[ANA] = ANA_USER
        await h.mention("Count the open tickets")
        _, run_id = await h.card()
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        (result,) = results(h)
        button = next(
            e
            for b in result["blocks"]
            for e in b.get("elements", [])
            if e.get("action_id") == REPEAT
        )
        assert button["value"] == run_id and button["text"]["text"] == "Run this every…"

        await h.click(REPEAT, run_id, ANA, "1700000000.000300")
        await h.slack.wait_for(lambda: bool(h.slack.of("views.open")))
        form = h.slack.of("views.open")[-1]["view"]
        form = json.loads(form) if isinstance(form, str) else form
        assert form["title"]["text"] == "Run this every…"
        assert [b["block_id"] for b in form["blocks"]] == ["when", "budget", "tz"]

        bad = await submit_repeat(h, ANA, when="every blursday")
        assert bad.status_code == 200
        assert "every blursday" in bad.json()["errors"]["when"]
        assert (await people.listed(h.bot.svc, None)).schedules == ()
        money = await submit_repeat(h, ANA, when="every day at 9:00", budget="lots")
        assert "amount" in money.json()["errors"]["budget"]
        too_much = await submit_repeat(h, ANA, when="every day at 9:00", budget="500")
        assert "$20.00" in too_much.json()["errors"]["budget"]

        ok = await submit_repeat(
            h, ANA, when="every weekday at 9:00", budget="$2", tz="Europe/Paris"
        )
        assert ok.status_code == 200 and not ok.text
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        told = h.slack.of("chat.postEphemeral")[-1]
        assert told["user"] == ANA and told["text"].startswith("Scheduled by Ana")
        (made,) = (await people.listed(h.bot.svc, None)).schedules
        assert made.from_run == run_id and made.budget_usd == 2 and made.approved
        assert made.rule.cron == "0 9 * * 1,2,3,4,5" and made.rule.tz == "Europe/Paris"
        assert made.place.channel == CHANNEL and made.owner == ANA

        # Its first firing runs at once: the maker approved this cohort at this budget.
        clock = FakeClock(made.next_at)
        h.bot.firings.start()
        assert await firings.fire_due(h.bot.svc, clock) == 1
        (firing,) = [f for _, f in await firings.read_firings(h.bot.svc, "0-0")]
        assert not firing.asks
        await h.slack.wait_for(lambda: len(results(h)) == 2, timeout_s=20)
        await h.runs_end()


async def test_a_schedule_asked_for_in_a_direct_message_is_refused(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.users[ANA] = ANA_USER
        form = {
            "team_id": "T1",
            "team_domain": "acme",
            "channel_id": "D0ANA",
            "channel_name": "directmessage",
            "user_id": ANA,
            "command": "/caramba",
            "text": "schedule add every day at 9:00 | Count the open tickets",
            "response_url": f"{h.slack.url}response_url",
            "trigger_id": "1.2.3",
        }
        resp = await h.post(urllib.parse.urlencode(form), "application/x-www-form-urlencoded")
        assert resp.status_code == 200
        said = await ephemeral(h, 1)
        assert said == "Schedules post in a channel; ask in the channel you want them in."
        assert (await people.listed(h.bot.svc, None)).schedules == ()
