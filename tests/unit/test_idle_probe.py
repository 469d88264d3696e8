"""The background loop's first look (``core.state.idle_probe``): one round trip that says
which of a tick's steps may find work. It must never hide work: each state of the keys
that means "there is something" answers "look", and so does an answer it cannot read."""

from __future__ import annotations

import time
from typing import Any

import pytest
from redis.exceptions import ResponseError

from core.llm.scripted import ScriptedModel
from core.process.background import tick
from core.state.idle_probe import probe
from core.state.intents import GROUP
from tests.conftest import ServicesFactory


@pytest.fixture
def store(settings: Any, make_services: ServicesFactory, any_redis: Any) -> Any:
    return make_services(settings, ScriptedModel(), redis=any_redis, start=False).store


async def test_an_empty_store_says_look_only_where_it_cannot_know(store: Any) -> None:
    looked = await probe(store)
    assert looked.soonest is None
    assert looked.intents  # no stream nor group yet: taking creates the group
    assert not looked.learning
    assert looked.watchdog


async def test_intents_new_or_pending_say_look_and_taken_and_acked_say_not(store: Any) -> None:
    queue = store.intents
    await queue.ensure_group()
    assert not (await probe(store)).intents
    stream = store.keys.intents()
    await store.redis.xadd(stream, {"i": "{}"})
    assert (await probe(store)).intents  # new: not read by the group yet (lag 1)
    taken = await queue.take("someone", 60_000, 10)
    assert len(taken) == 1
    assert (await probe(store)).intents  # read, not acknowledged: pending under a consumer
    await store.redis.xack(stream, GROUP, taken[0][0])
    assert not (await probe(store)).intents


async def test_runs_waiting_for_the_library_or_claims_say_look(store: Any) -> None:
    keys = store.keys
    await store.redis.sadd(keys.ended_runs(), "run-1")
    assert (await probe(store)).learning
    await store.redis.srem(keys.ended_runs(), "run-1")
    await store.redis.hset(keys.learning_claims(), "run-2", str(time.time() - 3600))
    assert (await probe(store)).learning  # a claim, maybe stale: requeue_stale looks at it


async def test_a_held_watchdog_round_and_the_soonest_timer(store: Any) -> None:
    keys = store.keys
    await store.redis.set(keys.watchdog(), "1", px=60_000)
    await store.timers.add("later", 2_000_000_000.0)
    await store.timers.add("sooner", 1_900_000_000.5)
    looked = await probe(store)
    assert not looked.watchdog
    assert looked.soonest == 1_900_000_000.5


async def test_a_wrong_typed_key_is_an_error_not_a_quiet_skip(store: Any) -> None:
    await store.redis.set(store.keys.ended_runs(), "not a set")
    with pytest.raises(ResponseError):
        await probe(store)


async def test_a_wrong_typed_intents_key_says_look(store: Any) -> None:
    # Not a quiet skip: the intents step runs and reports the error (its own test).
    await store.redis.set(store.keys.intents(), "not a stream")
    assert (await probe(store)).intents


async def test_an_idle_tick_makes_one_round_trip_for_timers_intents_library_watchdog(
    settings: Any, make_services: ServicesFactory, any_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_services(settings, ScriptedModel(), redis=any_redis, start=False)
    await svc.store.intents.ensure_group()
    await svc.store.redis.set(svc.store.keys.watchdog(), "1", px=60_000)  # another's round
    sent: list[str] = []
    redis = svc.store.redis
    real_execute, real_pipeline = redis.execute_command, redis.pipeline

    async def execute(*args: Any, **options: Any) -> Any:
        sent.append(" ".join(str(a) for a in args[:2]))
        return await real_execute(*args, **options)

    def pipeline(*args: Any, **options: Any) -> Any:
        pipe = real_pipeline(*args, **options)
        real = pipe.execute

        async def run(*a: Any, **k: Any) -> Any:
            sent.append("pipeline:" + "+".join(str(c[0][0]) for c in pipe.command_stack))
            return await real(*a, **k)

        monkeypatch.setattr(pipe, "execute", run)
        return pipe

    monkeypatch.setattr(redis, "execute_command", execute)
    monkeypatch.setattr(redis, "pipeline", pipeline)
    busy, soonest = await tick(svc)
    assert (busy, soonest) == (False, None)
    probes = [s for s in sent if s.startswith("pipeline:ZRANGE+XINFO")]
    assert len(probes) == 1
    # Nothing else for these four steps (schedules and spend have their own reads).
    keys = svc.store.keys
    mine = (keys.timers(), keys.intents(), keys.ended_runs(), keys.learning_claims())
    assert not [s for s in sent if s.endswith(mine) or s.endswith(" " + keys.watchdog())], sent
