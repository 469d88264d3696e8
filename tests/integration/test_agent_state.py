"""The agent room's state on real Redis (``core.state.agents``/``questions``/``parking``):
a designed cohort is created all or none, a question is claimed once, parking releases the
wake-up claim with it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.agent.create import new_agent_state, spawn_cohort
from core.errors import UsageError
from core.llm.scripted import ScriptedModel
from core.runs.control import propose_run
from core.state import parking, questions
from core.types import AgentSpec
from core.types.cohort import Cohort
from tests.conftest import make_settings

pytestmark = pytest.mark.integration


def _cohort() -> Cohort:
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=("finish",))
    lead = AgentSpec(name="Lead", role="lead", parent_id=root.id, tools=("finish",))
    member = AgentSpec(name="Member", role="member", parent_id=lead.id, tools=("finish",))
    return Cohort(task="plan the offsite", agents=(root, lead, member))


async def test_a_cohort_is_created_whole(make_services: Any, real_redis: Any) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=real_redis, start=False)
    cohort = _cohort()
    run_id = await propose_run(svc, cohort.task, cohort, requested_by="U1")
    states = await spawn_cohort(svc, run_id, cohort, cohort.task, "U1")
    assert [s.spec.name for s in states] == ["Orchestrator", "Lead", "Member"]
    assert await svc.store.agent_ids(run_id) == sorted(a.id for a in cohort.agents)
    events = await svc.store.read_events(run_id)
    assert [e.kind for _, e in events].count("agent_created") == 3


async def test_a_cohort_meeting_one_of_its_agents_creates_none(
    make_services: Any, real_redis: Any
) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=real_redis, start=False)
    cohort = _cohort()
    run_id = await propose_run(svc, cohort.task, cohort, requested_by="U1")
    member = cohort.agents[2]
    # The last agent of the tree exists already: the cohort is refused before any write.
    existing = new_agent_state(svc, run_id, member, task=cohort.task, requester="U1", brief="b")
    await svc.store.create_agent(existing, [])
    with pytest.raises(UsageError):
        await spawn_cohort(svc, run_id, cohort, cohort.task, "U1")
    assert await svc.store.agent_ids(run_id) == [member.id]
    assert not await svc.store.resolve_name(run_id, "Orchestrator")
    assert not await real_redis.exists(svc.store.keys.agent_slots(run_id)), "no slot taken"
    events = await svc.store.read_events(run_id)
    assert "agent_created" not in [e.kind for _, e in events]


async def test_a_question_is_claimed_once(make_services: Any, real_redis: Any) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=real_redis, start=False)
    q = questions.OpenQuestion(
        id="q-a-1", run_id="r1", agent_id="a", question="Which day?", asked_at=1, deadline=2
    )
    async with real_redis.pipeline(transaction=True) as pipe:
        questions.ask_write(svc.store, q)(pipe)
        await pipe.execute()
    assert await questions.count(svc.store, "r1") == 1
    assert await questions.open_questions(svc.store, "r1") == [q]
    claims = await asyncio.gather(*(questions.claim(svc.store, "r1", q.id) for _ in range(5)))
    assert [c for c in claims if c is not None] == [q]
    assert await questions.get(svc.store, "r1", q.id) is None


async def test_parking_releases_the_wake_up_claim(make_services: Any, real_redis: Any) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=real_redis, start=False)
    wake = svc.store.keys.wake("r1", "a")
    await real_redis.set(wake, "3")
    await parking.park(svc.store, "r1", "a")
    assert await parking.parked(svc.store, "r1") == ["a"]
    assert not await real_redis.exists(wake)
    await parking.unpark(svc.store, "r1", "a")
    assert await parking.parked(svc.store, "r1") == []
