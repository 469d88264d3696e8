"""A call waiting for approval, at its edges (in process, the recording scheduler):
approved for the run, the tool's later calls ask nobody; two clicks at once make one
decision; nobody deciding in time is what the agent reads; a cancelled run's call is
never decided; mail that came while the call waited is read after it; and a worker
killed after the approval neither loses the call nor runs it twice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.agent import approvals, faults
from core.agent.context import ToolContext
from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people
from core.runs.control import start_run
from core.runs.outcomes import ActionDecided, Refused
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.state import approvals as book
from core.tools.registry import tool
from core.types import AgentSpec
from core.types.agent import AgentStatus
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import make_settings

ALICE, BOB = Person("console", "Alice"), Person("U0BOB", "Bob")
COUNT: list[int] = []
DIE_DURING: list[bool] = []


class WorkerKilled(BaseException):
    """Stands for SIGKILL: nothing after it runs in that delivery."""


@tool(read_only=False, category="test")
async def count_up(ctx: ToolContext, by: int = 1) -> str:
    """Add to the counter (an effect a second run would show).

    Args:
        by: How much to add.
    """
    COUNT.append(by)
    if DIE_DURING:
        raise WorkerKilled
    return f"counted {len(COUNT)}"


def services(make_services: Any, redis: Any, model: ScriptedModel, **approval: Any) -> Services:
    settings = make_settings(
        tools={"approval": {"tools": ["count_up"], **approval}},
        approval={"approvers": ["U0BOB"]},  # Bob may decide too
    )
    svc = make_services(settings, model, redis=redis, start=False)
    svc.scheduler = RecordingScheduler()
    svc.tools.register(count_up)
    COUNT.clear()
    return svc


async def waits(svc: Services, model: ScriptedModel) -> tuple[str, str, TurnJob]:
    """Start a run whose agent calls count_up; its first turn waits. (run, approval, job)"""
    spec = AgentSpec(name="Counter", tools=("count_up", "finish"))
    run_id = await start_run(svc, "count", spec)
    job = svc.scheduler.jobs.pop()  # type: ignore[attr-defined]
    assert await run_turn(svc, job) is TurnOutcome.WAITING
    (request,) = await approvals.pending(svc, run_id)
    return run_id, request.id, TurnJob(run_id=run_id, agent_id=spec.id, seq=1)


def counting(*replies: Reply) -> ScriptedModel:
    return ScriptedModel().script("*", Reply(calls=(call("count_up", {}),)), *replies)


async def test_approved_for_the_run_later_calls_ask_nobody(make_services, any_redis) -> None:
    model = counting(Reply(calls=(call("count_up", {}),)), Reply(calls=(call("finish", {}),)))
    svc = services(make_services, any_redis, model)
    run_id, aid, job = await waits(svc, model)
    done = await people.approve_action(svc, run_id, aid, ALICE, "run")
    assert isinstance(done, ActionDecided) and done.line == "Approved for this run by Alice."
    assert await run_turn(svc, job) is TurnOutcome.CONTINUED  # ran it, then asked again: no
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=job.agent_id, seq=2)) in (
        TurnOutcome.CONTINUED,
        TurnOutcome.ENDED,
    )
    assert COUNT == [1, 1] and len(await book.every(svc.store, run_id)) == 1


async def test_two_clicks_at_once_make_one_decision(make_services, any_redis) -> None:
    model = counting()
    svc = services(make_services, any_redis, model)
    run_id, aid, _ = await waits(svc, model)
    outcomes = await asyncio.gather(
        people.approve_action(svc, run_id, aid, ALICE, "once"),
        people.approve_action(svc, run_id, aid, BOB, "deny", reason="no"),
    )
    decided = [o for o in outcomes if isinstance(o, ActionDecided)]
    refused = [o for o in outcomes if isinstance(o, Refused)]
    assert len(decided) == 1 and len(refused) == 1
    assert "already decided" in refused[0].reason
    assert decided[0].decision == await book.decision(svc.store, run_id, aid)


async def test_nobody_deciding_in_time_is_what_the_agent_reads(make_services, any_redis) -> None:
    model = counting(Reply(calls=(call("finish", {"result": "gave up"}),)))
    svc = services(make_services, any_redis, model, timeout_s=0.2)
    run_id, aid, job = await waits(svc, model)
    await asyncio.sleep(0.3)
    assert await run_turn(svc, job) is TurnOutcome.ENDED  # the timer's wake-up
    assert COUNT == []
    note = [m.content for m in model.requests[-1].messages if m.role == "tool"][-1]
    assert note is not None and note.startswith("[No decision]")
    late = await people.approve_action(svc, run_id, aid, ALICE, "once")
    assert isinstance(late, Refused)
    made = await book.decision(svc.store, run_id, aid)
    assert made is not None and made.choice == "expired"


async def test_a_cancelled_run_s_call_is_never_decided_nor_run(make_services, any_redis) -> None:
    model = counting()
    svc = services(make_services, any_redis, model)
    run_id, aid, job = await waits(svc, model)
    assert (await svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN
    assert (await people.cancel(svc, run_id, ALICE)).line.startswith("Cancelled by Alice")
    late = await people.approve_action(svc, run_id, aid, ALICE, "once")
    assert isinstance(late, Refused) and "cancelled" in late.reason
    await run_turn(svc, job)
    assert COUNT == []


async def test_mail_that_came_meanwhile_is_read_after_the_outcome(make_services, any_redis) -> None:
    model = counting(Reply(calls=(call("finish", {"result": "ok"}),)))
    svc = services(make_services, any_redis, model)
    run_id, aid, job = await waits(svc, model)
    said = await people.reply(svc, run_id, "also count the chairs", ALICE)
    assert said.run.status is RunStatus.WAITING_HUMAN
    woken = [j for j in svc.scheduler.jobs if j.seq == 1]  # type: ignore[attr-defined]
    for j in woken:  # woken by the mail: the call still waits, the mail stays unread
        assert await run_turn(svc, j) is TurnOutcome.DROPPED
    assert len(model.requests) == 1
    await people.approve_action(svc, run_id, aid, ALICE, "once")
    assert await run_turn(svc, job) is TurnOutcome.ENDED
    messages = model.requests[-1].messages
    result = next(i for i, m in enumerate(messages) if m.role == "tool")
    mail = next(i for i, m in enumerate(messages) if "also count the chairs" in (m.content or ""))
    assert messages[result].content == "counted 1" and mail > result


@pytest.mark.parametrize("where", ["after the call was kept", "during the call"])
async def test_a_worker_killed_after_the_approval_runs_the_call_once(
    make_services, any_redis, monkeypatch, where: str
) -> None:
    model = counting(Reply(calls=(call("finish", {"result": "ok"}),)))
    svc = services(make_services, any_redis, model)
    run_id, aid, job = await waits(svc, model)
    await people.approve_action(svc, run_id, aid, ALICE, "once")

    async def die(svc_: Any, name: str) -> None:
        if name == "approved_call_kept" and where == "after the call was kept":
            raise WorkerKilled

    with monkeypatch.context() as patch, pytest.raises(WorkerKilled):
        patch.setattr(faults, "point", die)
        if where == "during the call":
            DIE_DURING.append(True)
        await run_turn(svc, job)
    DIE_DURING.clear()
    assert COUNT == [1]
    assert await run_turn(svc, job) is TurnOutcome.ENDED  # delivered again: not run again
    assert COUNT == [1]
    state = await svc.store.load_agent(run_id, job.agent_id)
    assert state is not None and state.status is AgentStatus.FINISHED
    read = [m.content for m in model.requests[-1].messages if m.role == "tool"][-1]
    if where == "after the call was kept":
        assert read == "counted 1"
    else:
        assert read is not None and read.startswith("[Outcome unknown]")


async def test_a_question_answered_while_a_call_waits_keeps_the_run_waiting(
    make_services, any_redis
) -> None:
    ask = call("ask_user", {"question": "Which room?"})
    model = ScriptedModel().script(
        "*",
        Reply(calls=(ask, call("count_up", {}))),
        Reply(calls=(call("finish", {"result": "ok"}),)),
    )
    svc = services(make_services, any_redis, model)
    spec = AgentSpec(name="Counter", tools=("ask_user", "count_up", "finish"))
    run_id = await start_run(svc, "count", spec)
    assert await run_turn(svc, svc.scheduler.jobs.pop()) is TurnOutcome.WAITING  # type: ignore[attr-defined]
    (waiting,) = await approvals.pending(svc, run_id)
    assert (await people.reply(svc, run_id, "the big one", ALICE)).answered
    assert (await svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN
    await people.approve_action(svc, run_id, waiting.id, ALICE, "once")
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=spec.id, seq=1)) is (
        TurnOutcome.ENDED
    )
    read = "\n".join(m.content or "" for m in model.requests[-1].messages)
    assert "counted 1" in read and "the big one" in read and COUNT == [1]
