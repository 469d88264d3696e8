"""Slack's AI-app conventions (issue 15): the assistant thread status follows the run
(which agent is doing what) and is cleared at its end, only in threads that have one."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.ports import Place
from bots.chat.store import ChatStore
from bots.slack.assistant import PLANNING, AssistantStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import (
    ANA,
    CHANNEL,
    Harness,
    quick_library,
    scripted,
    serve_bot,
)
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"


@contextlib.asynccontextmanager
async def slack_bot(make_services: Any, redis: Any, slack: FakeSlackAPI) -> AsyncIterator[Harness]:
    """The bot calling ``slack``, its status message edited at every change."""
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = quick_library(planning_settings(), folder)
    wanted = {"api_url": slack.url, "status_interval_s": 0.0}
    s = s.model_copy(update={"slack": s.slack.model_copy(update=wanted)})
    svc = make_services(s, scripted(design()), redis=redis)
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def approved_run(h: Harness) -> str:
    await h.mention("Compare the three cheapest flights from Lisbon to Berlin.")
    _, run_id = await h.card()
    await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
    await h.runs_end()
    return run_id


def statuses(slack: FakeSlackAPI) -> list[str]:
    calls = slack.of("assistant.threads.setStatus")
    assert all((c["channel_id"], c["thread_ts"]) == (CHANNEL, THREAD) for c in calls)
    return [c["status"] for c in calls]


async def test_the_status_follows_the_run_and_is_cleared_at_its_end(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI().start()
    try:
        async with slack_bot(make_services, real_redis, slack) as h:
            await approved_run(h)
    finally:
        await slack.stop()
    shown = statuses(slack)
    assert shown[0] == PLANNING and shown[-1] == "", shown
    # Which agent is doing what (coalesced like the status message: the latest shown).
    assert any(s.startswith("is working: ") and s.endswith("…") for s in shown), shown
    assert all(len(s) <= 120 for s in shown)
    # Each status goes with an edit of the status message: never more calls than edits.
    edits = [u for u in slack.of("chat.update") if "tool calls" in u["text"]]
    assert len(shown) <= len(edits) + 2


async def test_no_more_status_calls_where_the_thread_has_none(make_services, real_redis) -> None:
    slack = await FakeSlackAPI(assistant=False).start()
    try:
        async with slack_bot(make_services, real_redis, slack) as h:
            await approved_run(h)
            edits = [u for u in slack.of("chat.update") if "tool calls" in u["text"]]
            # (How often depends on how fast the run goes: once at least.)
            assert edits, "the status message was edited"
            # Refused once (for the planning); never asked again, by any process.
            assert statuses(slack) == [PLANNING]
            again = AssistantStatus(h.bot.client, ChatStore.of(h.bot.svc, "slack"))
            assert not await again.works(Place(CHANNEL, THREAD))
            assert not await again.show(Place(CHANNEL, THREAD), "is thinking…")
            assert statuses(slack) == [PLANNING]
    finally:
        await slack.stop()


async def test_slack_down_skips_the_status_and_never_fails_the_edit(real_redis) -> None:
    slack = await FakeSlackAPI().start()
    place = Place(CHANNEL, "1700000000.000777")
    client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
    status = AssistantStatus(client, ChatStore(real_redis, "caramba-test-assistant", "slack"))
    try:
        await slack.go_down("5xx")
        assert not await status.show(place, "is working: Scout A used search…")
        await slack.come_back()
        # Unreachable is not a refusal: the next change is shown.
        assert await status.show(place, "is working: Scout A finished…")
        assert statuses_of(slack, place) == ["is working: Scout A finished…"]
    finally:
        await real_redis.delete(status._key(place))
        await slack.stop()


def statuses_of(slack: FakeSlackAPI, place: Place) -> list[str]:
    return [
        c["status"]
        for c in slack.of("assistant.threads.setStatus")
        if c["thread_ts"] == place.thread
    ]
