"""Mail that keeps coming while a call waits for a person's approval, with either
scheduler: each message wakes the agent, whose turn finds the call still waiting and
ends without a save (the mail stays unread until the decision). Those deliberate waits
are not deaths of the turn: more of them than ``limits.max_crashes`` neither quarantine
the agent nor dead-letter its mail; approved, the call runs once and every message is
read after it. A turn whose workers really died is still quarantined."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people
from core.runs.control import start_run
from core.runs.outcomes import ActionDecided
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.types import AgentSpec
from core.types.agent import EndReason
from core.types.events import RunFinished, ToolCalled
from core.types.people import Person
from core.types.run import RunStatus
from tests.helpers import collect
from tests.scenarios.test_tool_approval import approval_settings, waiting
from tests.schedulers import SCHEDULERS

ALICE = Person("U0ALICE", "Alice")
WRITE = {"path": "outputs/report.md", "content": "the report"}


async def read_and_dropped(svc: Services, run_id: str, agent_id: str, count: int) -> None:
    """Until the wake-up for message ``count`` has run and ended: the start script read
    the message (``count`` entries pending in the agent's group, none acknowledged) and
    the turn released its wake-up claim — or the agent ended (it must not: said)."""
    keys = svc.store.keys
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pending: Any = await svc.redis.xpending(keys.inbox(run_id, agent_id), agent_id)
        claimed = await svc.redis.exists(keys.wake(run_id, agent_id))
        if pending["pending"] >= count and not claimed:
            return
        state = await svc.store.load_agent(run_id, agent_id)
        assert state is not None and not state.status.terminal, (
            f"ended at message {count}: {state and state.end_detail}"
        )
        await asyncio.sleep(0.01)
    raise AssertionError(f"message {count}'s wake-up did not end (pending {pending})")


@SCHEDULERS
async def test_mail_during_a_long_approval_wait_is_kept_and_read_after(services: Any) -> None:
    model = ScriptedModel().script(
        "*",
        Reply(content="I save the report.", calls=(call("write_file", WRITE),)),
        Reply(calls=(call("finish", {"result": "saved"}),)),
    )
    svc = await services(approval_settings(), model)
    spec = AgentSpec(name="Writer", tools=("write_file", "finish"))
    run_id = await start_run(svc, "write the report", spec, requested_by=ALICE.id)
    asked = await waiting(svc, run_id)

    many = svc.settings.limits.max_crashes + 5
    for n in range(1, many + 1):
        said = await people.reply(svc, run_id, f"note number {n}.", ALICE)
        assert said.run.status is RunStatus.WAITING_HUMAN
        await read_and_dropped(svc, run_id, spec.id, n)  # one wake-up per message
    assert len(model.requests) == 1  # the wake-ups asked the model nothing

    approved = await people.approve_action(svc, run_id, asked.id, ALICE, "once")
    assert isinstance(approved, ActionDecided)
    events = await collect(svc, run_id, timeout_s=30)
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.COMPLETED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.FINISHED, state.end_detail
    ran = [e for e in events if isinstance(e, ToolCalled) and "report.md" in (e.result or "")]
    assert [(e.tool, e.ok) for e in ran] == [("write_file", True)], ran  # the call ran once
    assert await svc.workspace.read(run_id, "outputs/report.md") == b"the report"
    assert await svc.redis.xlen(svc.store.keys.dead_letters(run_id)) == 0
    told = "\n".join(m.content or "" for m in model.requests[-1].messages)
    assert all(f"note number {n}." in told for n in range(1, many + 1))
    left: Any = await svc.redis.xpending(svc.store.keys.inbox(run_id, spec.id), spec.id)
    assert left["pending"] == 0  # all read and acknowledged with the save


async def test_a_waiting_turn_whose_workers_die_is_still_quarantined(
    make_services: Any, any_redis: Any
) -> None:
    """The waits are counted apart, not forgiven: a turn also delivered ``max_crashes``
    times to workers that died is quarantined at its next delivery, as before, and the
    mail it kept reading goes to the dead letters (kept, never lost)."""
    settings = approval_settings()
    settings = settings.model_copy(
        update={"limits": settings.limits.model_copy(update={"max_crashes": 2})}
    )
    model = ScriptedModel().script("*", Reply(calls=(call("write_file", WRITE),)))
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    spec = AgentSpec(name="Writer", tools=("write_file", "finish"))
    run_id = await start_run(svc, "write the report", spec, requested_by=ALICE.id)
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.WAITING
    job = TurnJob(run_id=run_id, agent_id=spec.id, seq=1)

    for n in range(1, 5):  # twice max_crashes mail wake-ups: waits, not deaths
        recorder.jobs.clear()
        await people.reply(svc, run_id, f"note number {n}.", ALICE)
        assert recorder.jobs == [job]
        assert await run_turn(svc, job) is TurnOutcome.DROPPED
    for _ in range(2):  # two deliveries whose worker died (the counter is bumped at start)
        await svc.store.count_delivery(run_id, spec.id, 1)

    assert await run_turn(svc, job) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.QUARANTINED
    assert "died under it 2 times" in state.end_detail and "max_crashes" in state.end_detail
    assert await svc.redis.xlen(svc.store.keys.dead_letters(run_id)) == 4
    assert len(model.requests) == 1 and await svc.workspace.info(run_id, WRITE["path"]) is None
