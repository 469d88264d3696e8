"""The state room's store on fakeredis: a run is created in one step (record, head and
index, or nothing), the store owns its event log, turns and side rooms by composition,
and multi-key writes of the side rooms land together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest

from core.effects.timers import TIMER, ExpireProposal, WakeAgent
from core.errors import UsageError
from core.state.event_log import EventLog
from core.state.keys import Keys
from core.state.snapshot import dump
from core.state.store import Store
from core.state.turns import Turns
from core.types.events import RunFinished
from core.types.run import RunState, RunStatus

KEYS = Keys("t")


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
def store(redis: Any) -> Store:
    return Store(redis, KEYS, 1000)


async def test_a_run_is_created_with_its_head_and_index_at_once(store: Store, redis: Any) -> None:
    run = RunState(id="run_a", task="count the beans", created_at=123.0)
    await store.create_run(run)
    assert (await store.get_run("run_a")).task == "count the beans"
    assert (await store.run_head("run_a")).status is RunStatus.PROPOSED
    assert await redis.get(KEYS.run_head("run_a")) is not None
    assert await redis.zscore(KEYS.runs_index(), "run_a") == 123.0


async def test_a_run_created_twice_is_refused_and_nothing_is_overwritten(
    store: Store, redis: Any
) -> None:
    await store.create_run(RunState(id="run_b", task="first", created_at=1.0))
    with pytest.raises(UsageError):
        await store.create_run(
            RunState(id="run_b", task="second", status=RunStatus.RUNNING, created_at=2.0)
        )
    assert (await store.get_run("run_b")).task == "first"
    assert (await store.run_head("run_b")).status is RunStatus.PROPOSED
    assert await redis.zscore(KEYS.runs_index(), "run_b") == 1.0


async def test_the_store_composes_its_rooms_on_one_client(store: Store) -> None:
    assert isinstance(store.events, EventLog) and isinstance(store.turns, Turns)
    for room in (store.events, store.turns, store.timers, store.intents, store.watchdog):
        assert room.redis is store.redis and room.keys is store.keys


async def test_an_ended_run_is_written_with_its_mark_for_the_library(
    store: Store, redis: Any
) -> None:
    await store.emit(RunFinished(run_id="run_c", status=RunStatus.COMPLETED))
    (_, event), *_ = await store.read_events("run_c")
    assert isinstance(event, RunFinished)
    assert await redis.sismember(KEYS.ended_runs(), "run_c")


async def test_the_watchdog_forgets_an_ended_run_in_both_places(store: Store, redis: Any) -> None:
    await redis.sadd(KEYS.active_runs(), "run_d")
    await redis.hset(KEYS.watchdog_marks(), "run_d", "1-0")
    await store.watchdog.forget("run_d")
    assert not await redis.sismember(KEYS.active_runs(), "run_d")
    assert not await redis.hexists(KEYS.watchdog_marks(), "run_d")


async def test_the_watchdog_ends_only_a_run_idle_twice_with_no_event_between(
    store: Store,
) -> None:
    assert not await store.watchdog.idle_again("run_e")  # first sight: marked
    assert await store.watchdog.idle_again("run_e")  # the same, again: idle twice
    assert not await store.watchdog.idle_again("run_e")  # the mark was cleared


async def test_a_timer_is_claimed_by_one_process(store: Store) -> None:
    timer = '{"run_id":"run_f","agent_id":"a1"}'
    await store.timers.add(timer, 10.0)
    assert await store.watchdog.has_timer("run_f")
    assert await store.timers.due(11.0, 10) == [timer]
    assert await store.timers.claim(timer)
    assert not await store.timers.claim(timer)


async def test_a_proposals_expiry_is_no_timer_that_moves_the_run(store: Store) -> None:
    """The watchdog's question: a proposal's expiry (no agent) wakes nobody."""
    await store.timers.add(TIMER.dump_json(ExpireProposal(run_id="run_g")).decode(), 9.0)
    assert not await store.watchdog.has_timer("run_g")
    await store.timers.add(TIMER.dump_json(WakeAgent(run_id="run_g", agent_id="a1")).decode(), 9.0)
    assert await store.watchdog.has_timer("run_g")


async def test_kept_keys_come_back_whole_and_expiring_ones_are_left(store: Store) -> None:
    redis = store.redis
    await redis.hset("t:library:entry:a", mapping={"kind": "agent", "runs": "2"})
    await redis.sadd("t:library:run:r:agents", "a", "b")
    await redis.set("t:library:format", "2")
    await redis.set("t:library:format:lock", "1", ex=60)
    saved = await dump(redis, "t:library:*")
    assert set(saved) == {"t:library:entry:a", "t:library:run:r:agents", "t:library:format"}
    fresh = Store(fakeredis.FakeAsyncRedis(decode_responses=True), KEYS, 1000)
    assert await fresh.restore_keys(saved) == 3
    assert await fresh.dump_keys("t:library:*") == saved
    await fresh.aclose()
