"""Runs feed the library: a cohort that ran is kept with its outcome, decisions and
ratings count for it, and it can be saved under a name and found again by it."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest

from core.library import EntryNotFoundError
from core.llm.scripted import Fail, Reply, ScriptedModel, call
from core.process.embedded import embedded_services, run_proposal
from core.runs import control, learning
from core.runs.approval import Approve
from core.services import Services
from core.types import AgentSpec, Cohort
from core.types.cohort import ReusedEntry
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


def _team() -> Cohort:
    """An orchestrator waiting for its analyst's result."""
    root = AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        description="Coordinates the churn study",
        tools=("wait_for_messages", "finish"),
    )
    analyst = AgentSpec(
        name="Analyst",
        role="member",
        parent_id=root.id,
        description="Finds why customers cancel from usage data",
        system_prompt="Compare the usage of customers who left with those who stayed.",
        tools=("calculate", "finish"),
    )
    return Cohort(task="Why do our customers cancel?", agents=(root, analyst))


def _team_model(*, analyst_fails: bool = False) -> ScriptedModel:
    def respond(r: Any) -> Reply | Fail:
        if r.agent_name == "Analyst":
            return Fail("provider down", status=400) if analyst_fails else _finish("usage fell")
        if any("[Result from" in (m.content or "") for m in r.messages):
            return _finish("they stopped using it")
        return Reply(calls=(call("wait_for_messages"),))

    return ScriptedModel(responder=respond)


def _finish(result: str) -> Reply:
    return Reply(calls=(call("finish", {"result": result}),))


async def _run_team(svc: Services, cohort: Cohort) -> str:
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    assert (await control.approve_run(svc, run_id, "@ana")).ok
    await collect(svc, run_id)
    assert await learning.learn(svc, run_id)
    return run_id


async def test_every_agent_of_a_run_that_went_well_is_kept_and_a_rating_down_forgets_them(
    tmp_path, make_services
) -> None:
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(tmp_path)})
    svc = make_services(settings, _team_model())
    cohort = _team()
    run_id = await _run_team(svc, cohort)
    library = await svc.library()
    for spec in cohort.agents:
        entry = await library.get(spec.id)
        assert entry.agent is not None and entry.agent.name == spec.name
        assert entry.source_run == run_id and (entry.record.runs, entry.record.successes) == (1, 1)
    (best, *_) = await library.find_agents("why customers cancel usage data")
    assert best.entry.id == cohort.agents[1].id

    # A good rating counts for the cohort and its agents; a rating down forgets the agents
    # this run was first to keep (the cohort keeps its record, rating included).
    run = await svc.store.get_run(run_id)
    await learning.rate(svc, run, stars=5)
    assert (await library.get(cohort.agents[1].id)).record.mean_stars == 5.0
    await learning.rate(svc, run, thumbs_up=False)
    for spec in cohort.agents:
        with pytest.raises(EntryNotFoundError):
            await library.get(spec.id)
    assert (await library.get(cohort.id)).record.ratings == 2


async def test_only_agents_that_finished_in_a_run_that_went_well_are_kept_reused_ones_count(
    tmp_path, make_services
) -> None:
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(tmp_path)})
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    # The analyst's calls fail: the run completes (the orchestrator answers without it),
    # and only the orchestrator, which finished its work, is kept.
    svc = make_services(settings, _team_model(analyst_fails=True), redis=redis)
    partly = _team()
    run_id = await _run_team(svc, partly)
    assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED
    library = await svc.library()
    assert (await library.get(partly.agents[0].id)).record.successes == 1
    with pytest.raises(EntryNotFoundError):
        await library.get(partly.agents[1].id)
    # A run that failed keeps none of its agents.
    svc = make_services(
        settings, ScriptedModel(responder=lambda r: Fail("down", status=400)), redis=redis
    )
    failed = _team()
    run_id = await _run_team(svc, failed)
    assert (await svc.store.get_run(run_id)).status is RunStatus.FAILED
    for spec in failed.agents:
        with pytest.raises(EntryNotFoundError):
            await library.get(spec.id)

    # The planner reused a stored analyst for the member: its entry counts the run, and the
    # member is not kept a second time.
    stored = await library.save_agent(partly.agents[1].model_copy(update={"id": "agt_stored"}))
    svc = make_services(settings, _team_model(), redis=redis)
    cohort = _team()
    member = cohort.agents[1]
    reused = ReusedEntry(entry_id=stored.id, kind="agent", agent_id=member.id)
    await _run_team(svc, cohort.model_copy(update={"reused": (reused,)}))
    assert (await library.get(stored.id)).record.successes == 1
    with pytest.raises(EntryNotFoundError):
        await library.get(member.id)
    assert (await library.get(cohort.agents[0].id)).record.runs == 1
    await redis.aclose()
