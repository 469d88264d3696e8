"""Slack as an AI app (issue 27), end to end over signed requests into the served bot and
the Slack fake: a mention and a direct message each get a run whose progress streams as
plan and task chunks (one task per agent) and ends in the same streamed message — the
answer, with Slack's feedback buttons; a click on them rates once; the App Home tab
publishes; a thread opened in the agent pane gets suggested prompts; agents' mentions
of people read as names and ping nobody."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bots.slack.blocks import CANCEL, FEEDBACK, FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.feedback import ALREADY, THANKS
from core.llm.scripted import Reply, ScriptedModel, call
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import (
    ANA,
    MALLORY,
    Harness,
    quick_library,
    responder,
    scripted,
    serve_bot,
)
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
TASK = "Compare the three cheapest flights from Lisbon to Berlin."
DM, DM_TS = "D0ANA", "1700000000.000300"
# What the orchestrator answers: a person's mention and a broadcast, as agents write them.
ANSWER = "Orchestrator says: 3 flights, checked with <@U0BOB99> — tell <!channel>"


def naming(request: Any) -> Reply:
    """The usual replies; the orchestrator's answer names a person and everyone."""
    reply = responder(request)
    if request.agent_name == "Orchestrator" and reply.calls and reply.calls[0][0] == "finish":
        return Reply(calls=(call("finish", {"result": ANSWER}),))
    return reply


@contextlib.asynccontextmanager
async def bot(
    make_services: Any, redis: Any, slack: FakeSlackAPI, model: ScriptedModel | None = None
) -> AsyncIterator[Harness]:
    """The bot calling ``slack`` (``model``: the usual plan's by default)."""
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = quick_library(planning_settings(), folder)
    wanted = {"api_url": slack.url, "status_interval_s": 0.0}
    s = s.model_copy(update={"slack": s.slack.model_copy(update=wanted)})
    svc = make_services(s, model or scripted(design()), redis=redis)
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def dm(h: Harness, text: str, *, event_id: str) -> httpx.Response:
    """A direct message to the bot (``message.im``), as Slack delivers it."""
    event = {"type": "message", "channel_type": "im", "channel": DM, "text": text, "ts": DM_TS}
    return await h.event(event_id, {**event, "event_ts": DM_TS})


def cards_in(h: Harness, channel: str) -> list[dict[str, Any]]:
    return [c for c in h.cards() if c["channel"] == channel]


async def approve(h: Harness, channel: str) -> str:
    await h.slack.wait_for(lambda: bool(cards_in(h, channel)))
    (card,) = cards_in(h, channel)
    run_id: str = card["blocks"][-1]["elements"][0]["value"]
    await click(h, {"action_id": "caramba_approve", "value": run_id}, ANA, channel)
    await h.runs_end()
    return run_id


async def click(h: Harness, action: dict[str, str], user: str, channel: str) -> httpx.Response:
    """A click in ``channel`` (a button's or the feedback_buttons element's ``action``)."""
    thread = DM_TS if channel == DM else "1700000000.000100"
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "trigger_id": "trig",
        "container": {"type": "message", "message_ts": "1700000000.000200", "channel_id": channel},
        "channel": {"id": channel},
        "message": {"ts": "1700000000.000200", "thread_ts": thread, "text": ""},
        "actions": [{"type": "button", "block_id": "b", **action}],
    }
    body = "payload=" + urllib.parse.quote(json.dumps(payload))
    return await h.post(body, "application/x-www-form-urlencoded")


def the_stream(slack: FakeSlackAPI, channel: str) -> dict[str, Any]:
    (stream,) = [s for s in slack.streams.values() if s["channel"] == channel]
    return stream


async def check_streamed_run(h: Harness, run_id: str, channel: str, thread: str) -> None:
    """One streamed message in ``thread``: a plan, one task per agent (each ends
    complete, with its last action), then the answer and the feedback buttons."""
    stream = the_stream(h.slack, channel)
    assert (stream["thread_ts"], stream["stopped"], stream["mode"]) == (thread, True, "plan")
    tasks = [c for c in stream["chunks"] if c["type"] == "task_update"]
    # Cancel comes first, while the run can be cancelled (the status message's button).
    opening = stream["chunks"][0]
    assert opening["type"] == "blocks" and CANCEL in json.dumps(opening["blocks"])
    assert opening["blocks"][0]["elements"][0]["value"] == run_id
    agents = await h.bot.svc.store.agent_ids(run_id)
    specs = [await h.bot.svc.store.load_spec(run_id, a) for a in agents]
    names = {spec[0].name for spec in specs if spec is not None}
    assert {t["title"] for t in tasks} == names, "one task per agent, by name"
    assert len({t["id"] for t in tasks}) == len(agents)
    last = {t["id"]: t for t in tasks}
    assert all(t["status"] == "complete" and t.get("details") for t in last.values()), last
    plans = [c["title"] for c in stream["chunks"] if c["type"] == "plan_update"]
    assert plans and plans[-1] == "Done", plans
    feedback, repeat = stream["blocks"]
    assert repeat["elements"][0]["value"] == run_id  # "Run this every…" (bots.slack.schedules)
    (element,) = feedback["elements"]
    assert (feedback["type"], element["type"]) == ("context_actions", "feedback_buttons")
    assert element["positive_button"]["value"] == f"{FEEDBACK_UP}:{run_id}"
    assert element["negative_button"]["value"] == f"{FEEDBACK_DOWN}:{run_id}"
    # Not posted besides: no status message, no second copy of the answer.
    posted = [p["text"] for p in h.slack.of("chat.postMessage") if p["channel"] == channel]
    assert not [t for t in posted if "· tool calls" in t], "no status message"
    assert not [t for t in posted if t.startswith("Orchestrator says")], "the answer once"


async def test_a_mention_streams_tasks_per_agent_then_one_answer(make_services, real_redis) -> None:
    slack = await FakeSlackAPI(streaming=True).start()
    slack.users["U0BOB99"] = {"id": "U0BOB99", "profile": {"display_name": "Bob"}}
    named = scripted(design())
    named.responder = naming
    try:
        async with bot(make_services, real_redis, slack, named) as h:
            await h.mention(TASK)
            run_id = await approve(h, "C1")
            await check_streamed_run(h, run_id, "C1", "1700000000.000100")
            text = the_stream(slack, "C1")["text"]
    finally:
        await slack.stop()
    # The answer, its mention of a person as their name: no ping, no raw id.
    assert "checked with @Bob" in text, text
    assert "<@" not in text and "U0BOB99" not in text and "&lt;@" not in text
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text


async def test_a_direct_message_is_a_request_in_its_own_thread(make_services, real_redis) -> None:
    slack = await FakeSlackAPI(streaming=True).start()
    try:
        async with bot(make_services, real_redis, slack) as h:
            assert (await dm(h, TASK, event_id="EvDM1")).status_code == 200
            await dm(h, TASK, event_id="EvDM1")  # Slack delivering it again: one request
            run_id = await approve(h, DM)
            await check_streamed_run(h, run_id, DM, DM_TS)
            run = await h.bot.svc.store.get_run(run_id)
    finally:
        await slack.stop()
    assert run.task == TASK and run.requested_by == ANA
    assert slack.of("reactions.add")[0] == {"channel": DM, "timestamp": DM_TS, "name": "eyes"}
    # The pane's thread is titled with what was asked.
    (title,) = slack.of("assistant.threads.setTitle")
    assert (title["channel_id"], title["thread_ts"], title["title"]) == (DM, DM_TS, TASK)
    assert len([c for c in slack.of("chat.postMessage") if "caramba_approve" in json.dumps(c)]) == 1


async def test_without_streaming_the_status_message_shows_progress(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI().start()  # a workspace that refuses chat.startStream
    try:
        async with bot(make_services, real_redis, slack) as h:
            await dm(h, TASK, event_id="EvDM2")
            await approve(h, DM)
    finally:
        await slack.stop()
    assert slack.streams == {}
    status = [p for p in slack.of("chat.postMessage") if "tool calls" in p["text"]]
    assert len(status) == 1 and status[0]["channel"] == DM, "the status message instead"
    assert any("3 flights" in p["text"] for p in slack.of("chat.postMessage"))


async def click_feedback(h: Harness, value: str, user: str) -> httpx.Response:
    """A click on Slack's feedback_buttons element, as Slack sends it."""
    vote = {"type": "feedback_buttons", "action_id": FEEDBACK, "value": value}
    return await click(h, vote, user, "C1")


async def test_a_feedback_click_rates_once(make_services, real_redis) -> None:
    slack = await FakeSlackAPI(streaming=True).start()
    try:
        async with bot(make_services, real_redis, slack) as h:
            await h.mention(TASK)
            run_id = await approve(h, "C1")
            element = the_stream(slack, "C1")["blocks"][0]["elements"][0]
            up, down = element["positive_button"]["value"], element["negative_button"]["value"]
            clicks = await asyncio.gather(*(click_feedback(h, up, ANA) for _ in range(3)))
            assert [c.status_code for c in clicks] == [200] * 3
            await click_feedback(h, down, MALLORY)
            await h.slack.wait_for(lambda: len(slack.of("chat.postEphemeral")) == 4)
            run = await h.bot.svc.store.get_run(run_id)
            assert run.cohort is not None
            record = (await (await h.bot.svc.library()).get(run.cohort.id)).record
    finally:
        await slack.stop()
    told = sorted((n["user"], n["text"]) for n in slack.of("chat.postEphemeral"))
    assert told == sorted([(ANA, THANKS), (ANA, ALREADY), (ANA, ALREADY), (MALLORY, THANKS)])
    assert (record.ratings, record.rating_sum) == (2, 1.0), "Ana's 👍 once, Mallory's 👎"


async def test_app_home_and_the_pane_show_runs_and_cohorts(make_services, real_redis) -> None:
    slack = await FakeSlackAPI(streaming=True).start()
    try:
        async with bot(make_services, real_redis, slack) as h:
            await h.mention(TASK)
            await approve(h, "C1")
            await h.event("EvHome", {"type": "app_home_opened", "tab": "home", "user": ANA})
            started = {"channel_id": DM, "thread_ts": "1700000000.000400", "user_id": ANA}
            await h.event(
                "EvPane", {"type": "assistant_thread_started", "assistant_thread": started}
            )
            await slack.wait_for(
                lambda: (
                    slack.of("views.publish") and slack.of("assistant.threads.setSuggestedPrompts")
                )
            )
    finally:
        await slack.stop()
    (home,) = slack.of("views.publish")
    view = home["view"] if isinstance(home["view"], dict) else json.loads(home["view"])
    assert home["user_id"] == ANA and view["type"] == "home"
    shown = json.dumps(view)
    assert "Recent runs" in shown and "Compare the three cheapest flights" in shown
    assert "Saved cohorts" in shown and "Spend in" in shown and "run_" not in shown
    (prompts,) = slack.of("assistant.threads.setSuggestedPrompts")
    listed = (
        prompts["prompts"]
        if isinstance(prompts["prompts"], list)
        else json.loads(prompts["prompts"])
    )
    assert prompts["channel_id"] == DM and 1 <= len(listed) <= 4
    assert any(p["message"] == TASK for p in listed), "the person's recent task"
    assert all(len(p["title"]) <= 60 for p in listed)
