"""A turn saved by a worker that died before the turn's follow-ups (its new agents' first
turns, waking the recipients of its messages) must still have them when the broker
delivers the turn again. Found by the Celery crash tests; reproduced here in-process.
"""

from __future__ import annotations

import pytest

from core.agent import faults
from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob
from core.types import AgentSpec
from core.types.agent import AgentStatus
from core.types.events import ChatPosted
from tests.conftest import make_settings


class WorkerKilled(BaseException):
    """Stands for SIGKILL at a fault point: nothing after it runs in that delivery."""


async def test_agents_created_by_a_turn_start_even_if_its_worker_died_after_the_save(
    make_services, any_redis, monkeypatch
) -> None:
    model = ScriptedModel().script(
        "O",
        Reply(
            calls=(
                call("create_agent", {"name": "A", "role": "member", "purpose": "a"}),
                call("wait_for_messages"),
            )
        ),
    )
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=("create_agent", "wait_for_messages"))
    run_id = await start_run(svc, "t", root)
    job = TurnJob(run_id=run_id, agent_id=root.id, seq=0)

    async def die_after_commit(svc_, name: str) -> None:
        if name == "after_commit":
            raise WorkerKilled

    with monkeypatch.context() as patch, pytest.raises(WorkerKilled):
        patch.setattr(faults, "point", die_after_commit)
        await run_turn(svc, job)
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None
    found = await svc.store.load_spec(run_id, child)
    assert found is not None and found[1] is AgentStatus.READY
    assert [j.agent_id for j in recorder.jobs] == [root.id]  # only the root's first turn

    await run_turn(svc, job)  # the broker delivers the turn again to another worker
    assert TurnJob(run_id=run_id, agent_id=child, seq=0) in recorder.jobs


class _FlakyOnce:
    """Raises a non-LLM error (a bug, a lost connection) on its first call only."""

    def __init__(self) -> None:
        self.inner = ScriptedModel()
        self.calls = 0

    async def complete(self, request):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 1:
            raise ConnectionError("connection reset by peer")
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


async def test_the_inline_scheduler_runs_a_turn_that_raised_again(make_services, any_redis) -> None:
    from core.types.events import RunFinished
    from core.types.run import RunStatus
    from tests.helpers import collect

    model = _FlakyOnce()
    svc = make_services(make_settings(), model, redis=any_redis)
    run_id = await start_run(svc, "t", AgentSpec(name="S", role="solo", tools=("finish",)))
    events = await collect(svc, run_id)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED
    assert model.calls == 2


# --- paid work is kept: a redelivered turn does not call the model again ----------------


@pytest.mark.parametrize("point", ["after_llm", "after_tools"])
async def test_a_redelivered_turn_reuses_the_answer_it_paid_for(
    make_services, any_redis, monkeypatch, point: str
) -> None:
    post, finish = call("post_to_chat", {"text": "hello"}), call("finish", {"result": "ok"})
    model = ScriptedModel().script("O", Reply(calls=(post, finish)))
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=("post_to_chat", "finish"))
    run_id = await start_run(svc, "t", root)
    job = TurnJob(run_id=run_id, agent_id=root.id, seq=0)

    async def die(svc_, name: str) -> None:
        if name == point:
            raise WorkerKilled

    with monkeypatch.context() as patch, pytest.raises(WorkerKilled):
        patch.setattr(faults, "point", die)
        await run_turn(svc, job)
    assert len(model.requests) == 1

    await run_turn(svc, job)  # delivered again: the saved answer is used
    assert len(model.requests) == 1, "the model was not called again"
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None and state.seq == 1 and state.status is AgentStatus.FINISHED
    assert state.result == "ok" and state.usage.total_tokens > 0
    events = [e for _, e in await svc.store.read_events(run_id, count=1000)]
    assert sum(isinstance(e, ChatPosted) for e in events) == 1, "posted once"
    # The answer is dropped with the save; nothing is left for a later delivery.
    assert not await svc.redis.hlen(svc.store.keys.responses(run_id))


async def test_a_message_read_by_many_redeliveries_is_still_consumed(
    make_services, any_redis, monkeypatch
) -> None:
    """Before: a message read by a turn delivered 3 times went to the dead-letter stream
    while the turn itself was retried (up to 5 times) and saved without it; its reader
    then waited for ever. Redelivery is not the message's failure."""
    settings = make_settings(limits={"max_deliveries": 5})
    model = (
        ScriptedModel()
        .script(
            "O",
            Reply(calls=(call("create_agent", {"name": "A", "role": "member", "purpose": "a"}),)),
            Reply(calls=(call("wait_for_messages"),)),
        )
        .script("A", Reply(calls=(call("finish", {"result": "the answer is 42"}),)))
    )
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=("create_agent", "wait_for_messages"))
    run_id = await start_run(svc, "t", root)
    await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=0))
    await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=1))  # waits
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None
    await run_turn(svc, TurnJob(run_id=run_id, agent_id=child, seq=0))  # result → O

    woken = recorder.of(root.id)[-1]
    crashes = 0

    async def die_before_save(svc_, name: str) -> None:
        nonlocal crashes
        if name == "after_tools" and crashes < 4:
            crashes += 1
            raise WorkerKilled

    with monkeypatch.context() as patch:
        patch.setattr(faults, "point", die_before_save)
        for _ in range(4):  # four deliveries die before the save (the old limit was 3)
            with pytest.raises(WorkerKilled):
                await run_turn(svc, woken)
        await run_turn(svc, woken)  # the fifth is saved
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None and state.seq == woken.seq + 1
    assert sum("the answer is 42" in (m.content or "") for m in state.thread) == 1
    assert not await svc.redis.exists(svc.store.keys.dead_letters(run_id))
    assert not await svc.bus.has_unread(run_id, root)
