"""Runs feed the library: a cohort that ran is kept with its outcome, decisions and
ratings count for it, and it can be saved under a name and found again by it."""

from __future__ import annotations

from typing import Any

import pytest

from core.library import EntryNotFoundError
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.embedded import embedded_services, run_proposal
from core.runs import control, learning
from core.runs.approval import Approve
from core.services import Services
from core.types import AgentSpec, Cohort
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect


def _cohort() -> Cohort:
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=("calculate", "finish"))
    return Cohort(task="Add two numbers carefully", agents=(root,))


async def test_a_finished_run_is_kept_rated_and_found_by_name(tmp_path) -> None:
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(tmp_path)})
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "4"}),)))

    async def approve(card):  # type: ignore[no-untyped-def]
        return Approve()

    async with embedded_services(settings, model) as svc:
        library = await svc.library()
        cohort = _cohort()
        run = await run_proposal(
            svc, cohort.task, cohort, approve, on_message=lambda _: None, library=library
        )
        assert run.status is RunStatus.COMPLETED
        entry = await library.get(cohort.id)
        assert (entry.record.runs, entry.record.successes) == (1, 1)

        await learning.feedback(library, run, stars=5)
        await learning.save_as(library, run, "adder")
        named = await library.get_by_name("adder")
        assert named.id == cohort.id and named.record.ratings == 1
        assert named.cohort is not None and named.cohort.agents[0].name == "Orchestrator"
        found = await library.find_cohorts("add two numbers")
        assert found and found[0].entry.id == cohort.id


async def _ran(make_services: Any, redis: Any, folder: Any) -> tuple[Services, Cohort, str]:
    """Services with a library in ``folder``, and a cohort run that completed."""
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(folder)})
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "4"}),)))
    svc = make_services(settings, model, redis=redis)
    cohort = _cohort()
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    assert (await control.approve_run(svc, run_id, "@ana")).ok
    await collect(svc, run_id)
    return svc, cohort, run_id


async def test_an_ended_run_is_recorded_once_by_whoever_gets_to_it(
    tmp_path, make_services, any_redis
) -> None:
    svc, cohort, run_id = await _ran(make_services, any_redis, tmp_path)

    assert await learning.learn_ended(svc) == 1
    assert await learning.learn_ended(svc) == 0, "recorded once"
    assert await learning.learn(svc, run_id), "a caller that needs the record is told it is"
    record = (await (await svc.library()).get(cohort.id)).record
    assert (record.runs, record.successes) == (1, 1)

    rejected_cohort = _cohort()
    rejected = await control.propose_run(svc, "t", rejected_cohort, requested_by="@ana")
    assert (await control.reject_run(svc, rejected, "@ana")).ok
    assert await learning.learn(svc, rejected) and await learning.learn_ended(svc) == 0
    with pytest.raises(EntryNotFoundError):
        await (await svc.library()).get(rejected_cohort.id)  # never ran: not kept


async def test_a_recording_left_by_a_dead_process_is_done_again(
    tmp_path, make_services, any_redis
) -> None:
    svc, cohort, run_id = await _ran(make_services, any_redis, tmp_path)
    # A process claimed it, took it out of the ended set, and died.
    ended = svc.store.keys.ended_runs()
    await svc.redis.hset(f"{ended}:claimed", run_id, "0")
    await svc.redis.srem(ended, run_id)
    assert not await learning.learn(svc, run_id), "claimed by someone else"

    assert await learning.learn_ended(svc) == 1, "the stale claim went back"
    record = (await (await svc.library()).get(cohort.id)).record
    assert (record.runs, record.successes) == (1, 1)
    assert await svc.redis.hlen(f"{ended}:claimed") == 0
