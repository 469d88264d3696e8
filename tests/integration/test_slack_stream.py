"""The result streamed into a Slack thread (issue 15: ``chat.startStream`` /
``appendStream`` / ``stopStream``) where Slack lets it, else posted as before; through the
outbox, so Slack going away mid-stream neither loses it nor streams it twice."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.courier import Courier
from bots.chat.outbox import Outbox
from bots.chat.ports import Place
from bots.chat.relay import ThreadRelay
from bots.chat.store import ChatStore
from bots.slack.adapter import slack_adapter
from bots.slack.blocks import FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.text import escape
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_assistant import approved_run, slack_bot
from tests.integration.test_slack_http import CHANNEL, scripted
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"
# Characters mrkdwn and markdown must not take as markup, over several pieces of 40.
TEXT = "\n".join(f"{i:02d}. fare <{i}> & co @channel: Lisbon → Berlin" for i in range(12))


def buttons(blocks: Any) -> list[str]:
    """The votes of the feedback buttons in ``blocks`` (their values, without the run)."""
    return [
        e[side]["value"].partition(":")[0]
        for b in blocks or []
        for e in b.get("elements", [])
        if e.get("type") == "feedback_buttons"
        for side in ("positive_button", "negative_button")
    ]


async def test_a_run_streams_its_result_with_the_feedback_buttons(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI(streaming=True).start()
    try:
        async with slack_bot(make_services, real_redis, slack) as h:
            run_id = await approved_run(h)
            run = await h.bot.svc.store.get_run(run_id)
    finally:
        await slack.stop()
    ((_, stream),) = slack.streams.items()
    assert (stream["channel"], stream["thread_ts"], stream["stopped"]) == (CHANNEL, THREAD, True)
    assert run.result and stream["text"] == escape(run.result)
    assert buttons(stream["blocks"]) == [FEEDBACK_UP, FEEDBACK_DOWN]
    assert stream["blocks"][0]["elements"][0]["positive_button"]["value"].endswith(":" + run_id)
    (start,) = slack.of("chat.startStream")
    assert start["recipient_user_id"] == run.requested_by and start["recipient_team_id"] == "T1"
    posted = json.dumps(slack.of("chat.postMessage"))
    assert FEEDBACK_UP not in posted and escape(run.result) not in posted, "not posted again"


async def test_refused_streaming_posts_the_result_as_before(make_services, real_redis) -> None:
    slack = await FakeSlackAPI().start()  # a workspace without the streaming methods
    try:
        async with slack_bot(make_services, real_redis, slack) as h:
            run_id = await approved_run(h)
            run = await h.bot.svc.store.get_run(run_id)
    finally:
        await slack.stop()
    assert len(slack.of("chat.startStream")) == 1 and slack.streams == {}
    (result,) = [p for p in slack.of("chat.postMessage") if FEEDBACK_UP in json.dumps(p)]
    assert run.result and escape(run.result) in result["text"]


class Streaming:
    """A relay that streams, and the courier delivering its outbox with a client of
    its own (no retries of its own: the outbox's tries are the ones that count)."""

    def __init__(self, svc: Any, slack: FakeSlackAPI, run_id: str) -> None:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
        adapter = slack_adapter(svc, client)
        adapter.transport.streamer.chunk_chars = 40  # type: ignore[attr-defined]
        place = Place(CHANNEL, THREAD)
        self.redis, self.run_id = svc.redis, run_id
        self.relay = ThreadRelay(place, run_id, adapter.renderer, adapter.limits, streams=True)
        self.outbox = Outbox(ChatStore.of(svc, "slack"))
        self.courier = Courier(self.outbox, adapter, run_id, place)

    async def finish(self, text: str) -> None:
        """Queue the run's end and deliver it (as the bot does, through the outbox)."""
        done = RunFinished(run_id=self.run_id, status=RunStatus.COMPLETED, result=text)
        await self.relay.on_event(done)
        entries, _ = self.relay.take()
        assert [e.kind for e in entries] == ["stream"]
        await self.outbox.add(self.run_id, entries)
        ended = asyncio.Event()
        ended.set()
        await asyncio.wait_for(self.courier.run(ended), 30)


@contextlib.asynccontextmanager
async def streaming(
    make_services: Any, redis: Any, run_id: str, **fake: Any
) -> AsyncIterator[tuple[Streaming, FakeSlackAPI]]:
    slack = await FakeSlackAPI(**fake).start()
    s = planning_settings()
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(None), redis=redis)
    try:
        yield Streaming(svc, slack, run_id), slack
    finally:
        await redis.delete(f"{s.redis.key_prefix}:slack:outbox:{run_id}")
        await slack.stop()


def methods(slack: FakeSlackAPI) -> list[str]:
    return [c.method for c in slack.calls if c.method != "auth.test"]


async def test_a_result_streams_in_pieces_with_all_its_text(make_services, real_redis) -> None:
    async with streaming(make_services, real_redis, "run_s1", streaming=True) as (s, slack):
        await s.finish(TEXT)
    pieces = -(-len(escape(TEXT)) // 40)
    assert methods(slack) == [
        "chat.startStream",
        *["chat.appendStream"] * (pieces - 1),
        "chat.stopStream",
    ]
    ((_, stream),) = slack.streams.items()
    assert stream["text"] == escape(TEXT) and "<!channel>" not in stream["text"]
    assert stream["stopped"] and buttons(stream["blocks"]) == [FEEDBACK_UP, FEEDBACK_DOWN]


async def test_slack_down_mid_stream_delivers_it_once_later(make_services, real_redis) -> None:
    async with streaming(make_services, real_redis, "run_s2", streaming=True) as (s, slack):
        appended = 0

        def outage(method: str, args: dict[str, Any]) -> None:
            nonlocal appended
            if method == "chat.appendStream":
                appended += 1
                if appended == 2:  # this one done, the next calls find Slack broken
                    slack.broken = True
                    asyncio.get_running_loop().call_later(1.5, setattr, slack, "broken", False)

        slack.refusing = outage  # type: ignore[assignment]
        await s.finish(TEXT)
        assert slack.failed, "Slack was down for some tries"
    ((_, stream),) = slack.streams.items()
    assert stream["text"] == escape(TEXT), "every piece once, in order"
    assert stream["stopped"] and len(slack.of("chat.startStream")) == 1
    assert slack.of("chat.postMessage") == [], "streamed, not posted as well"


async def test_a_stream_slack_ends_is_removed_and_the_result_posted(
    make_services, real_redis
) -> None:
    async with streaming(make_services, real_redis, "run_s3", streaming=True) as (s, slack):
        slack.refusing = lambda method, args: (
            "message_not_in_streaming_state" if method == "chat.appendStream" else None
        )
        await s.finish(TEXT)
    assert len(slack.of("chat.startStream")) == 1
    ((ts, _),) = slack.streams.items()
    assert slack.of("chat.delete") == [{"channel": CHANNEL, "ts": ts}]
    posts = slack.of("chat.postMessage")
    assert "\n".join(p["text"] for p in posts) == escape(TEXT), "posted whole instead"
    assert FEEDBACK_UP in json.dumps(posts[-1]["blocks"])
