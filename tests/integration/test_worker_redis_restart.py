"""Workers survive the broker: Redis restarts while turns are in flight, and every run
still completes with the worker process that was running them.

Each test has a ``redis-server`` of its own on a free port (the shared test Redis is never
restarted), with its data in an append-only file fsynced on every write, like a production
Redis with persistence: the runs' state and the queued and unacknowledged tasks survive
the restart. The worker has more turn slots than there are turns, so a BRPOP is waiting
on the broker when Redis goes away: that is when closing the lost connection used to fail
in kombu, and the worker stopped (see ``tasks/consumer.py``).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import BusyLoadingError
from redis.exceptions import ConnectionError as RedisConnectionError

from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import LLMCalled, RunFinished
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.integration.processes import Process, RedisServer, worker_env

pytestmark = pytest.mark.integration

RUNS = 4
SLOTS = 8  # more than RUNS: a BRPOP is in flight when Redis goes away
LATENCY_S = 1.0  # each model call; a run is two turns
DOWN_S = 1.0
VISIBILITY_TIMEOUT_S = 5
PREFIX = "restart"
# Copies of a turn are counted as deliveries (the original, a retry after the outage, the
# broker's redelivery, the ledger's); production's cap would quarantine a slow turn here.
MAX_DELIVERIES = 20


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer(latency_s=LATENCY_S) as server:
        server.set_responder(solo)
        yield server


def solo(body: dict[str, Any]) -> FakeReply:
    """Calculate, then finish with the tool's answer."""
    done = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not done:
        return FakeReply(tool_calls=[("calculate", {"expression": "2**10"})])
    return FakeReply(tool_calls=[("finish", {"result": done[-1]})])


def env_for(redis_url: str, llm: ThreadedFakeLLMServer) -> dict[str, str]:
    return worker_env(
        redis__url=redis_url,
        redis__key_prefix=PREFIX,
        llm__model="openai/fake-model",
        llm__api_base=llm.base_url,
        celery__visibility_timeout_s=str(VISIBILITY_TIMEOUT_S),
        celery__turn_timeout_s="20",
        limits__max_deliveries=str(MAX_DELIVERIES),
    )


async def eventually(read: Any, done: Any, timeout_s: float, alive: Process | None = None) -> Any:
    """``await read()`` until ``done(value)`` (or ``alive`` exits); a Redis that is not
    back yet is retried."""
    deadline = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < deadline and (alive is None or alive.returncode is None):
        try:
            value = await read()
        except (RedisConnectionError, BusyLoadingError, OSError):
            value = None
        else:
            if done(value):
                return value
        await asyncio.sleep(0.2)
    return value


async def restart_mid_run(
    redis: RedisServer, llm: ThreadedFakeLLMServer, workers: Process
) -> dict[str, Any]:
    """Start RUNS runs; while their first turns wait for the model, kill Redis and start
    it again DOWN_S later; wait for the runs, the ledger and the broker to settle."""
    settings = load_settings(
        redis={"url": redis.url, "key_prefix": PREFIX},
        celery={"visibility_timeout_s": VISIBILITY_TIMEOUT_S},
        limits={"max_deliveries": MAX_DELIVERIES},
    )
    app = make_app(settings)
    publisher = CeleryScheduler(app, settings)
    client = Redis.from_url(redis.url, decode_responses=True)
    svc = build_services(settings, publisher, llm=ScriptedModel(), redis=client)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    try:
        asked = len(llm.requests)
        run_ids = [await start_run(svc, f"2 to the 10th? ({i})", spec) for i in range(RUNS)]
        # Every run's first turn is waiting for the model: RUNS tasks in flight.
        deadline = time.monotonic() + 20
        while len(llm.requests) < asked + RUNS:
            assert time.monotonic() < deadline, workers.tail()
            await asyncio.sleep(0.05)
        unacked_key = f"{PREFIX}:celery:unacked"  # kombu's, under celery's global key prefix
        in_flight = await client.hlen(unacked_key)
        redis.stop(signal.SIGKILL)  # like a crash: the AOF has every write
        killed_at = time.monotonic()
        await asyncio.sleep(DOWN_S)
        await asyncio.to_thread(redis.start)

        async def statuses() -> list[RunStatus]:
            return [(await svc.store.get_run(r)).status for r in run_ids]

        final = await eventually(
            statuses, lambda s: all(x.terminal for x in s), timeout_s=30, alive=workers
        )
        finished_in = time.monotonic() - killed_at

        async def all_events() -> dict[str, list[Any]]:
            return {r: [e for _, e in await svc.store.read_events(r, count=1000)] for r in run_ids}

        events = await eventually(all_events, lambda ev: ev is not None, timeout_s=10)
        # Every message published was run to its end, and acknowledged.
        ledger = await eventually(
            lambda: asyncio.to_thread(publisher.ledger.pending), lambda n: n == 0, 15
        )
        unacked = await eventually(lambda: client.hlen(unacked_key), lambda n: n == 0, 15)
    finally:
        await publisher.aclose()
        app.close()
        await client.aclose()
    return {
        "in_flight": in_flight,
        "statuses": final,
        "events": events,
        "finished_in": finished_in,
        "ledger": ledger,
        "unacked": unacked,
    }


def assert_completed_once(outcome: dict[str, Any], log: str) -> None:
    # The restart hit tasks in flight (about RUNS; a retry or a slow start changes that).
    assert outcome["in_flight"] >= 1, outcome
    assert outcome["statuses"] == [RunStatus.COMPLETED] * RUNS, (outcome["statuses"], log)
    for events in outcome["events"].values():
        final = next(e for e in events if isinstance(e, RunFinished))
        assert final.result == "2**10 = 1024", final
        # Nothing applied twice: one save per turn.
        turns = Counter((e.agent_id, e.seq) for e in events if isinstance(e, LLMCalled))
        assert set(turns.values()) == {1}, turns
    assert outcome["ledger"] == 0, log
    assert outcome["unacked"] == 0, log


async def test_a_worker_with_turns_in_flight_outlives_a_redis_restart(
    redis_server: RedisServer, fake_llm: ThreadedFakeLLMServer
) -> None:
    worker = Process.worker(env_for(redis_server.url, fake_llm), "worker", concurrency=SLOTS)
    try:
        worker.wait_for(" ready.", timeout=120)
        outcome = await restart_mid_run(redis_server, fake_llm, worker)
        log = worker.tail(80)

        # The same process carried on: it lost the broker, connected again, ran the turns.
        assert worker.returncode is None, log
        out = worker.output()
        assert "Connection to broker lost" in out, log
        assert out.count("Connected to redis://") >= 2, log
        assert "Unrecoverable error" not in out, log
        assert_completed_once(outcome, log)
        print(f"runs completed {outcome['finished_in']:.1f} s after Redis was killed")
        # A warm shutdown still ends it cleanly, with 0.
        assert worker.stop(timeout=30) == 0, worker.tail()
    finally:
        worker.cleanup()


async def test_caramba_worker_outlives_a_redis_restart(
    redis_server: RedisServer, fake_llm: ThreadedFakeLLMServer
) -> None:
    command = [sys.executable, "-m", "bots.cli", "worker", "-p", "2", "-c", str(SLOTS)]
    supervisor = Process(command, env_for(redis_server.url, fake_llm), "caramba-worker")
    try:
        supervisor.wait_for(" ready.", timeout=120, count=2)
        outcome = await restart_mid_run(redis_server, fake_llm, supervisor)
        log = supervisor.tail(80)

        assert supervisor.returncode is None, log
        out = supervisor.output()
        assert "Connection to broker lost" in out, log
        # Both worker processes lived through it: none had to be started again.
        # (The call keeper, on by default, is started beside them: not counted here.)
        assert len(re.findall(r"worker \d+ started \(pid ", out)) == 2, log
        assert "Unrecoverable error" not in out, log
        assert_completed_once(outcome, log)
        print(f"runs completed {outcome['finished_in']:.1f} s after Redis was killed")
        assert supervisor.stop(timeout=30) == 0, supervisor.tail()
    finally:
        supervisor.cleanup()
