"""The save that ends a run reads nothing of its own when the root's turn start read the
run's record (``core.state.turn_start``): it is guarded instead (``core.state.run_guard``).
A record or usage that moved between that start and the save is read again and the change
recomputed on it: nothing another writer did is lost, and the totals the run's end reports
are the run's usage at the save. Real Redis; the production client."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent import faults
from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnOutcome
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunState, RunStatus
from tests.conftest import make_settings

pytestmark = pytest.mark.integration


class Reads:
    """Counts the reads a save changing the run sends of its own."""

    def __init__(self, svc: Any) -> None:
        self.count = 0
        script = svc.store.turns.read_for_change

        async def counted(**kwargs: Any) -> Any:
            self.count += 1
            return await script(**kwargs)

        svc.store.turns.read_for_change = counted


async def _solo_run(make_services: Any, real_redis: Any) -> tuple[Any, str, Any]:
    model = ScriptedModel().script(
        "Solo", Reply(calls=(call("finish", {"result": "done"}),), prompt_tokens=100)
    )
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    run_id = await start_run(svc, "t", AgentSpec(name="Solo", role="solo", tools=("finish",)))
    return svc, run_id, recorder.jobs[0]


def _at_save(monkeypatch: pytest.MonkeyPatch, meanwhile: Any) -> None:
    async def point(_svc: object, name: str) -> None:
        if name == "after_tools":
            await meanwhile()

    monkeypatch.setattr(faults, "point", point)


async def _finished(svc: Any, run_id: str) -> list[RunFinished]:
    events = [e for _, e in await svc.store.read_events(run_id, count=1000)]
    return [e for e in events if isinstance(e, RunFinished)]


async def test_the_roots_end_is_its_save_alone(make_services, real_redis) -> None:
    svc, run_id, job = await _solo_run(make_services, real_redis)
    reads = Reads(svc)

    assert await run_turn(svc, job) is TurnOutcome.ENDED

    assert reads.count == 0, "the record came with the turn's start"
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and run.result == "done"
    (finished,) = await _finished(svc, run_id)
    assert finished.tokens == 120  # 100 prompt + 20 completion, this turn's
    head = await svc.store.run_head(run_id)
    assert head.status is RunStatus.COMPLETED and head.root_agent_id == run.root_agent_id


async def test_a_record_changed_meanwhile_is_read_again_and_kept(
    make_services, real_redis, monkeypatch
) -> None:
    svc, run_id, job = await _solo_run(make_services, real_redis)
    reads = Reads(svc)

    def retitle(run: RunState) -> tuple[RunState, list[Any]]:
        return run.model_copy(update={"task": "retitled meanwhile"}), []

    async def meanwhile() -> None:  # a field the head does not hold: its rev still moves
        await svc.store.update_run(run_id, retitle)

    _at_save(monkeypatch, meanwhile)
    assert await run_turn(svc, job) is TurnOutcome.ENDED

    assert reads.count == 1
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.task == "retitled meanwhile", "the other writer's change is not lost"
    assert len(await _finished(svc, run_id)) == 1


async def test_usage_added_meanwhile_is_in_the_totals(
    make_services, real_redis, monkeypatch
) -> None:
    svc, run_id, job = await _solo_run(make_services, real_redis)
    reads = Reads(svc)

    async def meanwhile() -> None:  # another agent's save
        await real_redis.hincrby(svc.store.keys.run_usage(run_id), "prompt_tokens", 1000)

    _at_save(monkeypatch, meanwhile)
    assert await run_turn(svc, job) is TurnOutcome.ENDED

    assert reads.count == 1
    (finished,) = await _finished(svc, run_id)
    assert finished.tokens == 1120


async def test_every_write_of_the_record_gives_the_head_a_new_rev(
    make_services, real_redis
) -> None:
    svc, run_id, _job = await _solo_run(make_services, real_redis)
    key = svc.store.keys.run_head(run_id)
    before = await real_redis.get(key)
    await svc.store.update_run(run_id, lambda run: (run.model_copy(), []))
    after = await real_redis.get(key)
    assert before != after
    assert (await svc.store.run_head(run_id)).rev != ""
