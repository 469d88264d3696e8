"""Intents are processed exactly once: after the turn that registered them is saved, never
for a turn that was not saved, and by another process when the first one died."""

from __future__ import annotations

import asyncio

from core.agent.turn import run_turn
from core.effects import intents
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnOutcome
from core.types import AgentSpec
from core.types.events import ChatPosted, Notified, RunFinished
from core.types.intents import PostToChat
from tests.conftest import make_settings
from tests.helpers import SlowModel, collect


def poster() -> AgentSpec:
    return AgentSpec(name="Poster", role="solo", tools=("post_to_chat", "notify", "finish"))


async def _events(svc, run_id):  # type: ignore[no-untyped-def]
    return [e for _, e in await svc.store.read_events(run_id, count=10_000)]


async def test_posts_and_notifications_reach_the_events_once(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel().script(
        "Poster",
        Reply(
            calls=(
                call("post_to_chat", {"text": "Interim: 3 flights found."}),
                call("notify", {"who": "@ana", "text": "please check the dates"}),
            )
        ),
        Reply(calls=(call("finish", {"result": "done"}),)),
    )
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "t", poster())
    events = await collect(svc, run_id)
    assert isinstance(events[-1], RunFinished)
    posts = [e for e in events if isinstance(e, ChatPosted)]
    notes = [e for e in events if isinstance(e, Notified)]
    assert [p.text for p in posts] == ["Interim: 3 flights found."]
    assert [(n.who, n.text) for n in notes] == [("@ana", "please check the dates")]
    assert posts[0].key.endswith(":0:0") and notes[0].key.endswith(":0:1")


async def test_a_turn_delivered_twice_posts_once(make_services, any_redis) -> None:
    settings = make_settings()
    model = SlowModel(
        ScriptedModel().script(
            "*",
            Reply(calls=(call("post_to_chat", {"text": "hello"}),)),
            Reply(calls=(call("post_to_chat", {"text": "hello"}),)),
        )
    )
    svc = make_services(settings, model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    run_id = await start_run(svc, "t", poster())
    job = recorder.jobs.pop()
    outcomes = await asyncio.gather(run_turn(svc, job), run_turn(svc, job))
    assert sorted(outcomes) == sorted([TurnOutcome.CONTINUED, TurnOutcome.DROPPED])
    await intents.process_pending(svc)
    posts = [e for e in await _events(svc, run_id) if isinstance(e, ChatPosted)]
    assert len(posts) == 1


async def test_intents_of_a_dead_worker_are_processed_once_by_another(
    make_services, any_redis
) -> None:
    settings = make_settings(scheduler={"intent_claim_idle_s": 0.3})
    svc = make_services(settings, ScriptedModel(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    run_id = await start_run(svc, "t", poster())
    intent = PostToChat(run_id=run_id, agent_id="agt_x", text="saved, then the worker died")
    keyed = intents.keyed([intent], run_id, "agt_x", 7)
    async with svc.redis.pipeline(transaction=True) as pipe:
        intents.save_write(svc, keyed)(pipe)
        await pipe.execute()

    # A worker claims the entry and dies before processing it: it stays pending.
    await svc.store.intents.ensure_group()
    taken = await svc.redis.xreadgroup(
        intents.GROUP, "dead-worker", {svc.store.keys.intents(): ">"}, count=10
    )
    assert taken and len(taken[0][1]) == 1
    assert await intents.process_pending(svc) == 0  # not idle long enough yet
    await asyncio.sleep(0.35)
    results = await asyncio.gather(*(intents.process_pending(svc) for _ in range(3)))
    assert sum(results) == 1
    assert await intents.process_pending(svc) == 0
    posts = [e for e in await _events(svc, run_id) if isinstance(e, ChatPosted)]
    assert [p.key for p in posts] == [f"{run_id}:agt_x:7:0"]


async def test_a_reminder_comes_back_as_a_message(make_services, any_redis) -> None:
    from core.process.background import run_background

    settings = make_settings(scheduler={"background_interval_s": 0.05})

    def respond(r: LLMRequest) -> Reply:
        reminded = [m for m in r.messages if "Reminder you set: call Bob" in (m.content or "")]
        if reminded:
            return Reply(calls=(call("finish", {"result": "called Bob"}),))
        if any(c.name == "remind_me" for m in r.messages for c in m.tool_calls):
            return Reply(calls=(call("wait_for_messages"),))
        return Reply(calls=(call("remind_me", {"text": "call Bob", "after_minutes": 0.005}),))

    svc = make_services(settings, ScriptedModel(responder=respond), redis=any_redis)
    spec = AgentSpec(
        name="Planner",
        role="lead",
        team_id="team-x",
        tools=("remind_me", "wait_for_messages", "finish"),
    )
    stop = asyncio.Event()
    background = asyncio.create_task(run_background(svc, stop))
    try:
        run_id = await start_run(svc, "t", spec)
        events = await collect(svc, run_id, timeout_s=10)
    finally:
        stop.set()
        await background
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result == "called Bob"
    assert await svc.redis.zcard(svc.store.keys.timers()) == 0
