"""A parent that waits for all its children (``wait_for_messages(all_children=True)``)
is woken once, by the last one to finish, and reads every result in that turn; a message
from a child still at work wakes it as any message does. Real Redis, the real turn loop,
a recording scheduler (the turns are run here, one by one)."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from tests.conftest import make_settings

pytestmark = pytest.mark.integration


def _child(name: str) -> tuple[str, dict[str, Any]]:
    spec = {"name": name, "role": "member", "purpose": "work", "tools": ["send_message"]}
    return call("create_agent", spec)


async def _family(make_services: Any, real_redis: Any, model: ScriptedModel) -> Any:
    """The root creates A and B and waits for both; returns what the tests need."""
    model.script(
        "O",
        Reply(calls=(_child("A"), _child("B"), call("wait_for_messages", {"all_children": True}))),
    )
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    tools = ("create_agent", "wait_for_messages", "send_message", "finish")
    root = AgentSpec(name="O", role="orchestrator", tools=tools)
    run_id = await start_run(svc, "two jobs", root)
    assert await run_turn(svc, recorder.jobs[-1]) is TurnOutcome.WAITING
    a = await svc.store.resolve_name(run_id, "A")
    b = await svc.store.resolve_name(run_id, "B")
    assert a is not None and b is not None
    return svc, recorder, run_id, root.id, a, b


def _woken(recorder: RecordingScheduler, agent_id: str, since: int) -> list[TurnJob]:
    return [j for j in recorder.jobs[since:] if j.agent_id == agent_id]


async def test_the_last_child_to_finish_wakes_the_parent_once(
    make_services: Any, real_redis: Any
) -> None:
    model = ScriptedModel()
    model.script("A", Reply(calls=(call("finish", {"result": "A's part"}),)))
    model.script("B", Reply(calls=(call("finish", {"result": "B's part"}),)))
    svc, recorder, run_id, root_id, a, b = await _family(make_services, real_redis, model)
    model.script("O", Reply(calls=(call("finish", {"result": "both"}),)))

    mark = len(recorder.jobs)
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=a, seq=0)) is TurnOutcome.ENDED
    assert _woken(recorder, root_id, mark) == [], "B still works: A's result waits"

    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=b, seq=0)) is TurnOutcome.ENDED
    woken = _woken(recorder, root_id, mark)
    assert woken == [TurnJob(run_id=run_id, agent_id=root_id, seq=1)], "B was the last"

    assert await run_turn(svc, woken[0]) is TurnOutcome.ENDED
    seen = [m.content or "" for m in model.requests[-1].messages]
    assert any("A's part" in text for text in seen) and any("B's part" in text for text in seen)


async def test_a_message_from_a_child_at_work_still_wakes_the_parent(
    make_services: Any, real_redis: Any
) -> None:
    model = ScriptedModel()
    ask = call("send_message", {"to": "parent", "body": "which file?"})
    model.script("A", Reply(calls=(ask,)))
    svc, recorder, run_id, root_id, a, _b = await _family(make_services, real_redis, model)

    mark = len(recorder.jobs)
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=a, seq=0)) is (TurnOutcome.CONTINUED)
    assert _woken(recorder, root_id, mark) == [TurnJob(run_id=run_id, agent_id=root_id, seq=1)]


async def test_without_all_children_the_first_result_wakes_the_parent(
    make_services: Any, real_redis: Any
) -> None:
    model = ScriptedModel()
    model.script("O", Reply(calls=(_child("A"), _child("B"), call("wait_for_messages"))))
    model.script("A", Reply(calls=(call("finish", {"result": "A's part"}),)))
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    tools = ("create_agent", "wait_for_messages", "send_message", "finish")
    root = AgentSpec(name="O", role="orchestrator", tools=tools)
    run_id = await start_run(svc, "two jobs", root)
    assert await run_turn(svc, recorder.jobs[-1]) is TurnOutcome.WAITING
    a = await svc.store.resolve_name(run_id, "A")
    assert a is not None

    mark = len(recorder.jobs)
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=a, seq=0)) is TurnOutcome.ENDED
    assert _woken(recorder, root.id, mark) == [TurnJob(run_id=run_id, agent_id=root.id, seq=1)]
