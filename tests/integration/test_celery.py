"""Turns as Celery tasks on a real worker (threads pool, in this process) and real Redis.

The scenarios of ``tests/scenarios/test_society.py`` also run here through the parametrised
``celery-redis`` case; these tests cover what only a broker does: the same turn delivered
more than once. A turn whose task keeps raising is tests/integration/test_turn_dispatch.py's
(under each ``celery.turn_dispatch``).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from core.types.events import AgentFinished, LLMCalled, RunFinished, ToolCalled
from core.types.run import RunStatus
from tasks.app import runtime_of
from tasks.scheduler import CeleryScheduler
from tests.helpers import collect
from tests.schedulers import celery_settings, celery_worker, worker_app

pytestmark = pytest.mark.integration


def calculator(request: LLMRequest) -> Reply:
    """Calculate once, then finish with the tool's answer: a function of the thread only,
    so every delivery of the same turn gets the same reply."""
    done = [m.content for m in request.messages if m.role == "tool"]
    if not done:
        return Reply(calls=(call("calculate", {"expression": "6*7"}),))
    return Reply(calls=(call("finish", {"result": done[-1]}),))


async def test_a_turn_delivered_three_times_is_applied_once(settings, real_redis) -> None:
    settings = celery_settings(settings, real_redis.test_prefix)
    model = ScriptedModel(responder=calculator)
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=real_redis)
    spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
    try:
        # Queue the first turn and two more copies of its message before any worker runs,
        # so the copies are taken by different threads at the same time.
        run_id = await start_run(svc, "6 times 7?", spec)
        job = TurnJob(run_id=run_id, agent_id=spec.id, seq=0)
        await publisher.submit(job)
        await publisher.submit(job)
        async with celery_worker(app, concurrency=4):
            events = await collect(svc, run_id, timeout_s=20)
            runtime = runtime_of(app)
            # The run can end before the other two copies were taken (turn 1 runs chained
            # in the task of the copy that won): wait until all three were started.
            counter = svc.store.keys.deliveries(run_id)
            for _ in range(200):
                if await real_redis.hget(counter, f"{spec.id}:0") == "3":
                    break
                await asyncio.sleep(0.05)
            # Every copy's ledger entry, and that of the turn chained after the first, is
            # settled once its turn ran (tasks.chain): none is left held or queued.
            for _ in range(200):
                if (unsettled := await asyncio.to_thread(publisher.ledger.pending)) == 0:
                    break
                await asyncio.sleep(0.05)
            # A re-run of either turn after the fact changes nothing.
            again = [
                await asyncio.to_thread(runtime.run_turn, job.model_copy(update={"seq": seq}))
                for seq in (0, 1)
            ]
    finally:
        await publisher.aclose()
        app.close()

    assert again == [TurnOutcome.DROPPED, TurnOutcome.DROPPED]
    assert unsettled == 0
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "6*7 = 42")
    assert Counter(e.seq for e in events if isinstance(e, LLMCalled)) == {0: 1, 1: 1}
    assert [e.tool for e in events if isinstance(e, ToolCalled)] == ["calculate", "finish"]
    assert sum(isinstance(e, AgentFinished | RunFinished) for e in events) == 2
    # Three deliveries by the broker and the re-run: each was counted.
    assert await real_redis.hget(svc.store.keys.deliveries(run_id), f"{spec.id}:0") == "4"
    # Usage was counted once per applied turn, not per delivery.
    calls = [e for e in events if isinstance(e, LLMCalled)]
    assert final.tokens == sum(e.prompt_tokens + e.completion_tokens for e in calls)
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and [m.role for m in state.thread].count("assistant") == 2
    assert events == await collect(svc, run_id, timeout_s=5)  # nothing was added later
