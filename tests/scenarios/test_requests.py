"""Chat requests planned by the scheduler (``core.runs.requests``): a cohort proposed, a direct
answer started, planning failures reported, cancellation and duplicate deliveries — run
inline and by a real Celery worker; and follow-ups from people to a running run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.agent.questions import follow_up
from core.config import Settings
from core.llm.scripted import Fail, Reply, ScriptedModel, call
from core.process.jobs import handle
from core.runs import control
from core.runs.control import start_run
from core.runs.requests import plan_request, request_run
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.state.event_hub import EventHub
from core.types import AgentSpec
from core.types.events import ErrorRaised, RunFinished, RunStarted, RunStatusChanged
from core.types.run import RunStatus
from tests.helpers import collect
from tests.planning_helpers import as_json, design, model
from tests.planning_helpers import settings as planning_settings
from tests.schedulers import SCHEDULERS


def quiet_settings(**planning: Any) -> Settings:
    """Planning without the library (no embedder to load)."""
    return planning_settings(library_top_k=0, **planning)


async def until_status(svc: Services, run_id: str, *wanted: RunStatus) -> RunStatus:
    for _ in range(500):
        status = (await svc.store.get_run(run_id)).status
        if status in wanted:
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} stayed {status.value}, not {wanted}")


@SCHEDULERS
async def test_a_planned_request_becomes_a_proposal(services, kind) -> None:
    m = model(planner=(as_json(design()),))
    svc = await services(quiet_settings(), m)
    run_id = await request_run(svc, "Compare flights to Berlin.", requested_by="@ana")
    assert (await svc.store.get_run(run_id)).status in (RunStatus.PLANNING, RunStatus.PROPOSED)

    await until_status(svc, run_id, RunStatus.PROPOSED)
    run = await svc.store.get_run(run_id)
    assert run.cohort is not None and run.root is not None and run.expires_at is not None
    assert {a.name for a in run.cohort.agents} >= {"Orchestrator", "Scout A"}
    assert run.requested_by == "@ana" and run.history[-1].to_status is RunStatus.PROPOSED
    assert run.planning is not None and run.planning.total_tokens > 0
    events = [e for _, e in await svc.store.read_events(run_id)]
    assert [type(e) for e in events] == [RunStatusChanged]
    assert events[0].status is RunStatus.PROPOSED  # type: ignore[union-attr]
    # Nothing runs before someone approves.
    assert await svc.store.agent_ids(run_id) == []


@SCHEDULERS
async def test_a_simple_request_starts_at_once(services, kind) -> None:
    m = ScriptedModel()
    direct = {"path": "direct", "reason": "a fact", "answer": "Paris."}
    m.script("router", Reply(calls=(call("submit_router", direct),)))
    svc = await services(quiet_settings(), m)
    run_id = await request_run(svc, "What is the capital of France?", requested_by="@ana")
    events = await collect(svc, run_id, timeout_s=20)
    assert any(isinstance(e, RunStarted) for e in events)
    assert events[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]
    run = await svc.store.get_run(run_id)
    assert [t.to_status for t in run.history] == [
        RunStatus.PROPOSED,
        RunStatus.APPROVED,
        RunStatus.RUNNING,
        RunStatus.COMPLETED,
    ]
    assert run.history[1].by == "@ana", "the request counts as the approval"


@SCHEDULERS
async def test_a_planning_failure_ends_the_run_with_the_reason(services, kind) -> None:
    m = model(planner=(Fail("the model server is gone", status=500),))
    svc = await services(quiet_settings(), m)
    run_id = await request_run(svc, "Plan a trip.", requested_by="@ana")
    (event,) = await collect(svc, run_id, timeout_s=20)
    assert isinstance(event, RunFinished) and event.status is RunStatus.FAILED
    assert event.error is not None and event.error.startswith("planning failed: LLM call")
    assert (await svc.store.get_run(run_id)).status is RunStatus.FAILED


@SCHEDULERS
async def test_a_model_that_cannot_plan_answers_directly_with_a_note(services, kind) -> None:
    m = model(planner=(Reply(content="no plan, sorry"),) * 4)
    svc = await services(quiet_settings(), m)
    run_id = await request_run(svc, "Plan a trip.", requested_by="@ana")
    events = await collect(svc, run_id, timeout_s=20)
    note = events[0]
    assert isinstance(note, ErrorRaised)
    assert note.message.startswith("The model 'openai/planner' could not design a team")
    assert "one agent answers" in note.hint
    assert any(isinstance(e, RunStarted) for e in events)
    assert events[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]
    run = await svc.store.get_run(run_id)
    assert run.cohort is None and run.root is not None and run.root.role == "ui"


async def test_a_request_cancelled_while_planning_is_not_proposed(make_services, settings) -> None:
    m = model(planner=(as_json(design()),))
    svc = make_services(quiet_settings(), m, start=False)
    run_id = await request_run(svc, "Compare flights.", requested_by="@ana")
    assert (await control.cancel_run(svc, run_id, "@ana")).ok
    assert await plan_request(svc, run_id) is TurnOutcome.DROPPED
    assert m.requests == [], "a cancelled request is not planned"
    assert (await svc.store.get_run(run_id)).status is RunStatus.CANCELLED


async def test_a_second_delivery_plans_nothing(make_services) -> None:
    m = model(planner=(as_json(design()),))
    svc = make_services(quiet_settings(), m, start=False)
    run_id = await request_run(svc, "Compare flights.", requested_by="@ana")
    job = TurnJob(run_id=run_id, kind="plan")
    outcomes = await asyncio.gather(plan_request(svc, run_id), plan_request(svc, run_id))
    assert sorted(outcomes) == [TurnOutcome.DROPPED, TurnOutcome.ENDED]
    routed = len([r for r in m.requests if r.agent_name == "router"])
    assert routed == 1
    assert await plan_request(svc, job.run_id) is TurnOutcome.DROPPED
    assert (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED


class _Killed(BaseException):
    """Stands for SIGKILL: nothing catches it, nothing after it runs."""


class _DiesOnce:
    """The worker dies (SIGKILL: nothing after it runs) at its ``nth`` model call: that
    call and every later one of the dead worker (the prompt creator's calls run side by
    side: which of them start before the exception reaches the test depends on the
    interpreter's scheduling) fail, until the job is delivered again (:meth:`revive`)."""

    def __init__(self, inner: ScriptedModel, nth: int) -> None:
        self.inner, self.nth, self.calls, self.dead = inner, nth, 0, False

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        if self.calls == self.nth or self.dead:
            self.dead = True
            raise _Killed
        return await self.inner.complete(request)

    def revive(self) -> None:
        self.dead = False

    async def aclose(self) -> None:
        return None


async def test_planning_after_a_crash_reuses_the_answers_paid_for(make_services) -> None:
    m = model(planner=(as_json(design()),))
    dying = _DiesOnce(m, nth=3)  # after the router and the planner answered
    svc = make_services(quiet_settings(), dying, start=False)
    run_id = await request_run(svc, "Compare flights to Berlin.", requested_by="@ana")
    with pytest.raises(_Killed):
        await plan_request(svc, run_id)
    paid = len(m.requests)
    assert paid == 2
    # The dead worker's claim lapses (it renews it no more); the job is delivered again.
    await asyncio.sleep(0.05)  # its other calls in flight die with it
    dying.revive()
    await svc.redis.delete(svc.store.keys.planning(run_id))
    assert await plan_request(svc, run_id) is TurnOutcome.ENDED
    assert (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED
    router_and_planner = [r for r in m.requests if r.agent_name in ("router", "planner")]
    assert len(router_and_planner) == 2, "the router and planner were not asked again"
    assert not await svc.redis.exists(svc.store.keys.responses(run_id)), "forgotten once used"


async def test_planning_that_takes_too_long_fails(make_services) -> None:
    class Stalled(ScriptedModel):
        async def complete(self, request: Any) -> Any:
            await asyncio.sleep(5)
            return await super().complete(request)

    svc = make_services(quiet_settings(timeout_s=0.2), Stalled())
    run_id = await request_run(svc, "Plan a trip.", requested_by="@ana")
    (event,) = await collect(svc, run_id)
    assert event.error == "planning failed: took over 0 s"  # type: ignore[union-attr]


async def test_a_follow_up_reaches_the_top_agent(make_services, settings) -> None:
    m = ScriptedModel()
    svc = make_services(settings, m, start=False)
    solo = AgentSpec(name="Solo", role="solo", tools=("finish",))
    run_id = await start_run(svc, "t", solo, requested_by="@ana")
    step = await follow_up(svc, run_id, "Also compare trains, please.", by="@bob")
    assert step.ok
    svc.scheduler.start(lambda job: handle(svc, job))  # type: ignore[attr-defined]
    await collect(svc, run_id)
    first = m.requests[0]
    assert any("Also compare trains" in (msg.content or "") for msg in first.messages)
    late = await follow_up(svc, run_id, "And buses?", by="@bob")
    assert not late.ok and "this run has already finished" in late.reason


async def test_one_reader_follows_many_runs(any_redis, make_services, settings) -> None:
    svc = make_services(settings, ScriptedModel(), redis=any_redis)
    hub = EventHub(svc.store, blocking=not svc.settings.redis.embedded)
    try:
        runs = [
            await start_run(svc, f"t{i}", AgentSpec(name="Solo", role="solo")) for i in range(5)
        ]

        async def events(run_id: str) -> list[str]:
            return [e.run_id async for _, e in hub.follow(run_id)]

        seen = await asyncio.wait_for(asyncio.gather(*(events(r) for r in runs)), 20)
        for run_id, run_events in zip(runs, seen, strict=True):
            assert run_events and set(run_events) == {run_id}
        assert hub.following == []
    finally:
        await hub.aclose()
