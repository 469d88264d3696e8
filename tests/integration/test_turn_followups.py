"""A save's follow-ups (core.state.turn_script): the wake-up its message earned is claimed
in the save script itself, so a worker killed right after the save leaves a claim and a
record behind; the turn's next delivery schedules the woken turn, once."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent import faults
from core.agent.turn import run_turn
from core.llm.scripted import Reply, call
from core.scheduler.base import TurnJob, TurnOutcome
from tests.integration.test_turn_round_trips import _team

pytestmark = pytest.mark.integration


class WorkerKilled(BaseException):
    """Stands for SIGKILL at a fault point: nothing after it runs in that delivery."""


async def test_a_wake_up_claimed_by_a_save_whose_worker_died_is_scheduled_once(
    make_services: Any, real_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    member = (Reply(calls=(call("finish", {"result": "42"}),)),)
    svc, recorder, run_id, root_id, member_id = await _team(make_services, real_redis, member)
    job = TurnJob(run_id=run_id, agent_id=member_id, seq=0)
    woken = TurnJob(run_id=run_id, agent_id=root_id, seq=1)

    async def die_after_commit(_svc: object, name: str) -> None:
        if name == "after_commit":
            raise WorkerKilled

    with monkeypatch.context() as patch, pytest.raises(WorkerKilled):
        patch.setattr(faults, "point", die_after_commit)
        await run_turn(svc, job)
    assert woken not in recorder.jobs
    assert await real_redis.get(svc.store.keys.wake(run_id, root_id)) == "1", "claimed"

    assert await run_turn(svc, job) is TurnOutcome.DROPPED  # delivered again: stale
    assert recorder.jobs.count(woken) == 1, "the claimed wake-up is scheduled"
    assert await run_turn(svc, job) is TurnOutcome.DROPPED  # and again: nothing more
    assert recorder.jobs.count(woken) == 1
    assert await real_redis.hget(svc.store.keys.agent(run_id, member_id), "followup_jobs") is None


async def test_a_record_an_older_worker_wrote_is_redone(
    make_services: Any, real_redis: Any
) -> None:
    member = (Reply(calls=(call("calculate", {"expression": "6*7"}),)),)
    svc, recorder, run_id, _root_id, member_id = await _team(make_services, real_redis, member)
    job = TurnJob(run_id=run_id, agent_id=member_id, seq=0)
    assert await run_turn(svc, job) is TurnOutcome.CONTINUED
    # As a worker before job lists left it when it died after the save (JSON).
    akey = svc.store.keys.agent(run_id, member_id)
    await real_redis.hset(akey, "followups", '{"seq": 0, "next_seq": 1}')
    recorder.jobs.clear()

    assert await run_turn(svc, job) is TurnOutcome.DROPPED

    assert recorder.jobs == [TurnJob(run_id=run_id, agent_id=member_id, seq=1)]
    assert await real_redis.hget(akey, "followups") is None
