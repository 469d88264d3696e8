"""The end of a run in Slack, offline: feedback buttons under the result and the votes
counted in the library, a long result uploaded as a file (``files_upload_v2`` against the
fake), and rate limits (HTTP 429) retried by the bot's client, then by the outbox."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.chat.courier import Courier
from bots.chat.outbox import Outbox
from bots.chat.ports import Place
from bots.chat.relay import ThreadRelay
from bots.chat.store import ChatStore
from bots.slack.adapter import slack_adapter
from bots.slack.app import SlackBot
from bots.slack.blocks import FEEDBACK, FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.feedback import ALREADY, THANKS
from bots.slack.secrets import SlackSecrets
from bots.slack.text import escape, split
from bots.slack.upload import POINTER
from core.types.events import ChatPosted, Notified, RunEvent, RunFinished
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import ANA, CHANNEL, MALLORY, SECRET, harness, scripted
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"
# Lines of text with characters mrkdwn must escape; well over slack.result_file_chars.
LONG = "\n".join(f"{i:04d} fare <{i}> & co: Lisbon → Berlin, 3 flights" for i in range(300))


def feedback_message(slack: FakeSlackAPI) -> dict[str, Any] | None:
    return next(
        (p for p in slack.of("chat.postMessage") if FEEDBACK_UP in json.dumps(p.get("blocks"))),
        None,
    )


async def test_the_result_has_feedback_buttons_and_votes_count_once(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("Compare the three cheapest flights from Lisbon to Berlin.")
        _, card_run = await h.card()
        await h.click("caramba_approve", card_run, ANA, "1700000000.000200")
        await h.slack.wait_for(lambda: feedback_message(h.slack) is not None)
        result = feedback_message(h.slack)
        assert result is not None and result is h.slack.of("chat.postMessage")[-1]
        assert "Orchestrator says: 3 flights" in result["text"] and result["thread_ts"] == THREAD
        section, buttons, repeat = result["blocks"]
        assert repeat["elements"][0]["text"]["text"] == "Run this every…"  # bots.slack.schedules
        assert "says: 3 flights" in section["text"]["text"]
        (element,) = buttons["elements"]  # Slack's feedback_buttons element
        assert (buttons["type"], element["type"]) == ("context_actions", "feedback_buttons")
        assert element["action_id"] == FEEDBACK
        up, down = element["positive_button"]["value"], element["negative_button"]["value"]
        assert (up, down) == (f"{FEEDBACK_UP}:{card_run}", f"{FEEDBACK_DOWN}:{card_run}")
        run_id = card_run
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.cohort is not None

        # A double click by Ana counts once; Mallory's 👎 counts too.
        clicks = await asyncio.gather(
            *(h.click(FEEDBACK, up, ANA, "1700000000.000500") for _ in range(2))
        )
        assert [r.status_code for r in clicks] == [200, 200]
        await h.click(FEEDBACK, down, MALLORY, "1700000000.000500")
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postEphemeral")) == 3)
        notes = h.slack.of("chat.postEphemeral")
        assert sorted((n["user"], n["text"]) for n in notes) == sorted(
            [(ANA, THANKS), (ANA, ALREADY), (MALLORY, THANKS)]
        )
        assert all(n["channel"] == CHANNEL and n["thread_ts"] == THREAD for n in notes)

        library = await h.bot.svc.library()
        record = (await library.get(run.cohort.id)).record
        assert (record.ratings, record.rating_sum) == (2, 1.0)
        assert (record.runs, record.successes) == (1, 1), "kept with its run at the first vote"

        # A later change of mind is refused too (also with the buttons results had
        # before feedback_buttons), and changes nothing.
        await h.click(FEEDBACK_DOWN, run_id, ANA, "1700000000.000500")
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postEphemeral")) == 4)
        assert h.slack.of("chat.postEphemeral")[-1] == {
            "channel": CHANNEL,
            "user": ANA,
            "thread_ts": THREAD,
            "text": ALREADY,
        }
        assert (await library.get(run.cohort.id)).record.ratings == 2


class Relayed:
    """A relay whose posts go through the run's outbox and are delivered at once by a
    courier with the bot's client (its 429 retries included)."""

    def __init__(self, bot: SlackBot) -> None:
        self.redis, run, place = bot.svc.redis, "run_r1", Place(CHANNEL, THREAD)
        slack = slack_adapter(bot.svc, bot.client)
        self.relay = ThreadRelay(place, run, slack.renderer, slack.limits)
        self.outbox = Outbox(ChatStore.of(bot.svc, "slack"))
        self.courier = Courier(self.outbox, slack, run, place)

    async def on_event(self, event: RunEvent) -> None:
        """Fold ``event`` in, queue its posts, and return once they are delivered."""
        await self.relay.on_event(event)
        entries, status = self.relay.take()
        await self.outbox.add("run_r1", entries, status)
        done = asyncio.Event()
        done.set()
        await self.courier.run(done)


@contextlib.asynccontextmanager
async def bot_relay(make_services: Any, redis: Any) -> AsyncIterator[tuple[Relayed, Any]]:
    """A relay posting through the bot's own client (with its 429 retries) to the fake."""
    slack = await FakeSlackAPI().start()
    s = planning_settings()
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    bot = SlackBot(
        make_services(s, scripted(None), redis=redis),
        SlackSecrets(bot_token="xoxb-test", signing_secret=SECRET),
    )
    try:
        yield Relayed(bot), slack
    finally:
        await bot.aclose()
        await slack.stop()


def finished(result: str, status: RunStatus = RunStatus.COMPLETED) -> RunFinished:
    error = None if status is RunStatus.COMPLETED else "the budget ran out"
    return RunFinished(run_id="run_r1", status=status, result=result, error=error)


async def test_a_long_result_is_uploaded_as_a_file(make_services, real_redis) -> None:
    async with bot_relay(make_services, real_redis) as (relay, slack):
        assert len(LONG) > relay.relay.limits.result_file_chars
        await relay.on_event(finished(LONG))
        methods = [c.method for c in slack.calls if c.method != "auth.test"]
        assert methods == [
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "chat.postMessage",
        ]
        (asked,) = slack.of("files.getUploadURLExternal")
        assert asked["filename"] == "result-run_r1.md"
        assert int(asked["length"]) == len(LONG.encode())
        (done,) = slack.of("files.completeUploadExternal")
        assert done["channel_id"] == CHANNEL and done["thread_ts"] == THREAD
        (file,) = done["files"]
        assert file["title"] == "Result of run_r1"
        assert slack.uploads[file["id"]].decode() == LONG, "the whole text, unescaped"

        (post,) = slack.of("chat.postMessage")
        assert post["thread_ts"] == THREAD and len(post["text"]) <= 3000
        assert post["text"].startswith("0000 fare &lt;0&gt; &amp; co")
        assert post["text"].endswith(f"(truncated; {POINTER})")
        assert FEEDBACK_UP in json.dumps(post["blocks"])


@pytest.mark.parametrize(
    "broken", ["files.getUploadURLExternal", "upload", "files.completeUploadExternal"]
)
async def test_a_failed_upload_posts_the_whole_result_in_pieces(
    make_services, real_redis, broken, caplog
) -> None:
    """Refused (``ok: false``): at once; the upload URL answering 500: after a few tries."""
    async with bot_relay(make_services, real_redis) as (relay, slack):
        slack.failing.add(broken)
        with caplog.at_level(logging.WARNING):
            await relay.on_event(finished(LONG))
        (refused,) = [r for r in caplog.records if "Slack refused the result file" in r.message]
        assert "posting its fallback" in refused.message
        assert refused.levelno == logging.WARNING, "its fallback is posted: not an error"
        tries = 3 if broken == "upload" else 1
        assert len(slack.of(broken)) == tries, "the upload got as far as the broken step"
        if broken != "files.completeUploadExternal":
            assert slack.of("files.completeUploadExternal") == []
        posts = slack.of("chat.postMessage")
        escaped = escape(LONG)
        assert len(posts) == len(split(escaped)) > 1
        assert all(len(p["text"]) <= 3000 and p["thread_ts"] == THREAD for p in posts)
        assert "\n".join(p["text"] for p in posts) == escaped, "nothing is lost"
        with_buttons = [FEEDBACK_UP in json.dumps(p.get("blocks")) for p in posts]
        assert with_buttons == [False] * (len(posts) - 1) + [True], "buttons on the last piece"


async def test_a_failure_is_said_as_one_without_rating_buttons(make_services, real_redis) -> None:
    async with bot_relay(make_services, real_redis) as (relay, slack):
        for status in RunStatus.FAILED, RunStatus.CANCELLED:
            await relay.on_event(finished("", status))
        failed, cancelled = slack.of("chat.postMessage")
        assert failed["text"] == ":x: the budget ran out" and "blocks" not in failed
        assert cancelled["text"] == ":x: the budget ran out" and "blocks" not in cancelled
        assert slack.of("files.getUploadURLExternal") == []


async def test_a_rate_limited_call_is_retried(make_services, real_redis) -> None:
    async with bot_relay(make_services, real_redis) as (relay, slack):
        slack.rate_limit("chat.postMessage", times=2)
        await relay.on_event(finished("Paris."))
        posts = slack.of("chat.postMessage")
        assert len(posts) == 3, "two answers 429, the third attempt goes through"
        assert all(p["text"] == "Paris." for p in posts)
        assert slack.limited["chat.postMessage"] == 0


async def test_nothing_is_lost_when_the_clients_retries_run_out(
    make_services, real_redis, caplog
) -> None:
    async with bot_relay(make_services, real_redis) as (relay, slack):
        slack.rate_limit("chat.postMessage", times=4)  # the first try and 3 retries
        with caplog.at_level(logging.WARNING):
            await relay.on_event(finished("a" * 3000 + "\n" + "b" * 10))
        assert "the result did not reach Slack (rate limited (ratelimited))" in caplog.text
        texts = [p["text"] for p in slack.of("chat.postMessage")]
        assert texts == ["a" * 3000] * 5 + ["b" * 10], "the outbox tried the first piece again"


async def test_notifications_and_posts_with_a_file_name_reach_the_thread(
    make_services, real_redis
) -> None:
    """``notify`` mentions a Slack user id given as such; ``post_to_chat`` with a file name
    uploads the text as that file, its message saying who posted it."""
    async with bot_relay(make_services, real_redis) as (relay, slack):
        await relay.on_event(
            Notified(run_id="run_r1", agent_id="a", who="<@U0BOB123>", text="fares are in")
        )
        await relay.on_event(
            Notified(run_id="run_r1", agent_id="a", who="@here", text="not a broadcast")
        )
        text = "# Fares\n<b>49 EUR</b> & more"
        await relay.on_event(
            ChatPosted(run_id="run_r1", agent_id="a", text=text, filename="reports/fares.md")
        )
        first, second = (p["text"] for p in slack.of("chat.postMessage"))
        assert first == ":bell: *a* for <@U0BOB123>: fares are in"
        assert "@here" not in second and "not a broadcast" in second
        (done,) = slack.of("files.completeUploadExternal")
        assert done["thread_ts"] == THREAD and done["initial_comment"] == "*a* posted fares.md"
        (file,) = done["files"]
        assert file["title"] == "fares.md" and slack.uploads[file["id"]].decode() == text
