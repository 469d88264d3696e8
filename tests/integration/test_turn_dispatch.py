"""The ``loop`` turn dispatch (``celery.turn_dispatch``, :mod:`tasks.dispatch`): a real
worker (threads pool, in this process) hands each turn to its event loop instead of a pool
thread, with the thread path's guarantees: runs end, a turn that keeps raising is retried
with back-off then quarantined, and a stopping worker finishes the turns in flight and
acknowledges them (nothing left in the ledger or unacknowledged at the broker)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from celery.worker import state as worker_state

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import build_services
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.agent import EndReason
from core.types.events import AgentFinished, LLMCalled, RunFinished
from core.types.run import RunStatus
from tasks.app import runtime_of
from tasks.dispatch import _seconds_until
from tasks.runtime import WorkerRuntime
from tasks.scheduler import TURN_TASK, CeleryScheduler, broker_key_prefix
from tests.helpers import collect
from tests.schedulers import celery_settings, celery_worker, worker_app

pytestmark = pytest.mark.integration


# Both dispatches keep the same guarantees; "loop" is the default.
DISPATCHES = pytest.mark.parametrize("dispatch", ["loop", "thread"])


def loop_settings(settings: Settings, prefix: str, dispatch: str, **limits: Any) -> Settings:
    settings = settings.model_copy(
        update={"limits": settings.limits.model_copy(update=limits)} if limits else {}
    )
    return celery_settings(settings, prefix, turn_dispatch=dispatch)


def calculator(request: LLMRequest) -> Reply:
    done = [m.content for m in request.messages if m.role == "tool"]
    if not done:
        return Reply(calls=(call("calculate", {"expression": "6*7"}),))
    return Reply(calls=(call("finish", {"result": done[-1]}),))


@DISPATCHES
async def test_a_run_ends(settings, real_redis, dispatch: str) -> None:
    settings = loop_settings(settings, real_redis.test_prefix, dispatch)
    model = ScriptedModel(responder=calculator)
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    try:
        async with celery_worker(app, concurrency=2):
            run_id = await start_run(svc, "6 times 7?", spec)
            events = await collect(svc, run_id, timeout_s=20)
            runtime = runtime_of(app)
            for _ in range(200):
                if await asyncio.to_thread(publisher.ledger.pending) == 0:
                    break
                await asyncio.sleep(0.05)
            pending = await asyncio.to_thread(publisher.ledger.pending)
    finally:
        await publisher.aclose()
        app.close()

    # With "loop" the consumer used the loop strategy, not Celery's (a pool thread a turn).
    strategy = app.tasks[TURN_TASK].Strategy
    assert (getattr(strategy, "__qualname__", "") == "LoopDispatch.strategy") == (
        dispatch == "loop"
    )
    assert runtime.turns_run >= 1
    assert pending == 0
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "6*7 = 42")
    assert sum(isinstance(e, LLMCalled) for e in events) == 2


@DISPATCHES
async def test_a_turn_that_keeps_raising_is_retried_then_quarantined(
    settings, real_redis, dispatch: str
) -> None:
    settings = loop_settings(settings, real_redis.test_prefix, dispatch, max_deliveries=3)

    def poison(request: LLMRequest) -> Reply:
        raise RuntimeError("a bug in the turn, not a model error")

    model = ScriptedModel(responder=poison)
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("finish",))
    try:
        async with celery_worker(app, concurrency=2):
            run_id = await start_run(svc, "anything", spec)
            events = await collect(svc, run_id, timeout_s=20)
            await asyncio.sleep(0.5)  # a message looping on would call the model again here
    finally:
        await publisher.aclose()
        app.close()

    assert len(model.requests) == 3  # tried, retried twice with back-off, then quarantined
    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.QUARANTINED
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED
    assert "quarantined" in (final.error or "")


@DISPATCHES
async def test_a_warm_shutdown_finishes_the_turn_in_flight(
    settings, real_redis, dispatch: str
) -> None:
    settings = loop_settings(settings, real_redis.test_prefix, dispatch)
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow(request: LLMRequest) -> Reply:
        loop.call_soon_threadsafe(started.set)
        if not any(m.role == "tool" for m in request.messages):
            time.sleep(0.3)  # the turn is in flight when the worker is told to stop
        return calculator(request)

    model = ScriptedModel(responder=slow)
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    runtime = runtime_of(app)
    try:
        async with celery_worker(app, concurrency=2):
            run_id = await start_run(svc, "6 times 7?", spec)
            await asyncio.wait_for(started.wait(), 20)
            worker_state.should_stop = 0  # what SIGTERM does: a warm shutdown
            for _ in range(200):  # the worker stops its runtime once the turns ended
                if runtime.turns_run and not await asyncio.to_thread(runtime_running, runtime):
                    break
                await asyncio.sleep(0.05)
        events = await collect(svc, run_id, timeout_s=5)
        pending = await asyncio.to_thread(publisher.ledger.pending)
        unacked = await real_redis.hlen(f"{broker_key_prefix(settings)}unacked")
    finally:
        worker_state.should_stop = None
        await publisher.aclose()
        app.close()

    assert pending == 0
    assert unacked == 0
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED


def runtime_running(runtime: WorkerRuntime) -> bool:
    return runtime._loop is not None


def test_a_retry_waits_until_its_eta() -> None:
    assert _seconds_until("2999-01-01T00:00:00+00:00") > 3e10  # about 973 years
    assert _seconds_until("2000-01-01T00:00:00") < 0  # no zone: UTC, long past
    assert _seconds_until("not a time") == 0.0
