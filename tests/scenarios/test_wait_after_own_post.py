"""An agent that posts on its team's topic and waits in the same turn: its own post is
unread by its own group, so the save wakes it; the wake-up reads only that post (never
shown to the agent) and goes back to sleep, acknowledging it. Before, the post stayed
pending and woke the agent again at once, 21 times in a fraction of a second, until its
turn was quarantined (``limits.max_crashes``) and the agent failed."""

from __future__ import annotations

from typing import Any

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from core.types.agent import AgentStatus, EndReason
from core.types.people import Person
from tests.conftest import make_settings


async def test_a_post_to_its_own_team_does_not_wake_it_for_ever(
    make_services: Any, any_redis: Any
) -> None:
    model = ScriptedModel().script(
        "*",
        Reply(
            calls=(
                call("send_message", {"to": "team", "body": "plan: I take the intro"}),
                call("wait_for_messages", {}),
            )
        ),
        Reply(calls=(call("finish", {"result": "done"}),)),
    )
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    spec = AgentSpec(
        name="Lead", team_id="t1", tools=("send_message", "wait_for_messages", "finish")
    )
    run_id = await start_run(svc, "write", spec)
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.WAITING
    job = TurnJob(run_id=run_id, agent_id=spec.id, seq=1)
    assert recorder.jobs == [job]  # woken by its own post (its group has not read it)

    woken = 0
    while recorder.jobs and woken <= svc.settings.limits.max_crashes:
        assert await run_turn(svc, recorder.jobs.pop(0)) is TurnOutcome.DROPPED
        woken += 1
    assert woken == 1 and recorder.jobs == []  # then asleep until mail comes
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.status is AgentStatus.WAITING

    await people.reply(svc, run_id, "the outline is ready", Person("U0ALICE", "Alice"))
    assert recorder.jobs == [job]
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.FINISHED, state.end_detail
    told = "\n".join(m.content or "" for m in model.requests[-1].messages)
    assert "the outline is ready" in told and len(model.requests) == 2
    assert await svc.redis.xlen(svc.store.keys.dead_letters(run_id)) == 0
