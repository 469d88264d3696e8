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
