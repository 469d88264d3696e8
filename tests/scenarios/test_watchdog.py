"""No run is stranded: a quarantined agent's run goes on (its parent is told), and a run
whose agents all wait for messages nobody will send is ended with the reason."""

from __future__ import annotations

import asyncio

from core.agent.turn import run_turn
from core.config import Settings
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.jobs import handle
from core.runs import watchdog
from core.runs.control import start_run
from core.runs.requests import request_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from core.types.agent import AgentStatus, EndReason
from core.types.events import ErrorRaised, RunEvent, RunFinished
from core.types.run import RunState, RunStatus
from tests.conftest import make_settings
from tests.helpers import collect

TOOLS = ("create_agent", "wait_for_messages", "finish")


def _deadlock_model() -> ScriptedModel:
    """O creates A and waits; A waits too: nobody will ever send a message."""
    return (
        ScriptedModel()
        .script(
            "O",
            Reply(
                calls=(
                    call("create_agent", {"name": "A", "role": "member", "purpose": "wait"}),
                    call("wait_for_messages"),
                )
            ),
        )
        .script("A", Reply(calls=(call("wait_for_messages"),)))
    )


async def test_a_run_that_nothing_can_move_on_is_ended_with_the_reason(
    make_services, any_redis
) -> None:
    svc = make_services(make_settings(), _deadlock_model(), redis=any_redis)
    run_id = await start_run(svc, "t", AgentSpec(name="O", role="orchestrator", tools=TOOLS))
    for _ in range(200):  # both agents end up waiting
        agents = [await svc.store.load_agent(run_id, a) for a in await svc.store.agent_ids(run_id)]
        if len(agents) == 2 and all(a and a.status is AgentStatus.WAITING for a in agents):
            break
        await asyncio.sleep(0.02)
    assert await svc.redis.sismember(svc.store.keys.active_runs(), run_id)

    assert not await watchdog.check(svc, run_id), "idle once: looked at again next round"
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING
    assert await watchdog.check(svc, run_id), "still idle, no event between: ended"

    events = await collect(svc, run_id)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is RunStatus.FAILED
    assert finished.error is not None and {"O", "A"} <= set(
        finished.error.split("(")[1].split(")")[0].split(", ")
    )
    assert "waits for a message that no one will send" in finished.error
    assert not await svc.redis.sismember(svc.store.keys.active_runs(), run_id)


async def test_a_busy_run_is_left_alone(make_services, any_redis) -> None:
    svc = make_services(make_settings(), _deadlock_model(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    run_id = await start_run(svc, "t", AgentSpec(name="O", role="orchestrator", tools=TOOLS))
    # O's first turn is queued (ready): something can move the run on.
    assert not await watchdog.check(svc, run_id)
    assert not await watchdog.check(svc, run_id)
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING


async def test_a_quarantined_agent_ends_and_its_run_goes_on(make_services, any_redis) -> None:
    class Killed(BaseException):
        pass

    model = (
        ScriptedModel()
        .script(
            "O",
            Reply(
                calls=(
                    call("create_agent", {"name": "A", "role": "member", "purpose": "a"}),
                    call("wait_for_messages"),
                )
            ),
            Reply(calls=(call("finish", {"result": "A could not do it; done without it"}),)),
        )
        .script("A", Reply(calls=(call("finish", {"result": "never saved"}),)))
    )
    settings = make_settings(limits={"max_deliveries": 2, "max_crashes": 2})
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)
    await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=0))
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None

    async def die(*_args: object) -> None:
        raise Killed

    job = TurnJob(run_id=run_id, agent_id=child, seq=0)
    original = svc.llm.complete
    svc.llm.complete = die  # type: ignore[method-assign]
    for _ in range(settings.limits.max_deliveries):
        try:
            await run_turn(svc, job)
        except Killed:
            pass
    svc.llm.complete = original  # type: ignore[method-assign]
    assert await run_turn(svc, job) is TurnOutcome.ENDED  # quarantined
    state = await svc.store.load_agent(run_id, child)
    assert state is not None and state.end_reason is EndReason.QUARANTINED

    # Its parent is woken with the failure and finishes the run.
    assert await run_turn(svc, recorder.of(root.id)[-1]) is TurnOutcome.ENDED
    events = [e for _, e in await svc.store.read_events(run_id, count=1000)]
    assert any(isinstance(e, ErrorRaised) and "quarantined" in e.message for e in events)
    assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED


def _stall_settings() -> Settings:
    return make_settings(scheduler={"stall_period_s": 0.15, "stall_periods": 2})


async def test_a_turn_lost_everywhere_is_submitted_again_and_the_run_finishes(
    make_services, any_redis
) -> None:
    model = ScriptedModel().script("O", Reply(calls=(call("finish", {"result": "done"}),)))
    svc = make_services(_stall_settings(), model, redis=any_redis)
    inline = svc.scheduler
    lost: list[TurnJob] = []

    class LosesTheFirst:
        """Loses the first turn submitted (a broker, a ledger and a chain all lost it)."""

        async def submit(self, job: TurnJob) -> None:
            if not lost:
                lost.append(job)
                return
            await inline.submit(job)

    svc.scheduler = LosesTheFirst()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)
    assert lost == [TurnJob(run_id=run_id, agent_id=root.id, seq=0)]
    assert not await watchdog.check(svc, run_id), "quiet for less than the stall span"
    await asyncio.sleep(0.35)  # > stall_periods × stall_period_s with no event
    assert not await watchdog.check(svc, run_id), "resubmitted, never failed"
    events = await collect(svc, run_id)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is RunStatus.COMPLETED


async def test_a_stalled_turn_is_resubmitted_once_per_span_and_never_while_leased(
    make_services, any_redis, caplog
) -> None:
    svc = make_services(_stall_settings(), _deadlock_model(), redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)
    first = TurnJob(run_id=run_id, agent_id=root.id, seq=0)
    assert recorder.jobs == [first]
    await asyncio.sleep(0.35)

    # A delivery holds the turn's lease (a long model call): nothing is resubmitted.
    lease = svc.store.keys.turn_lease(run_id, root.id, 0)
    await svc.redis.set(lease, "someone", px=5000)
    assert not await watchdog.check(svc, run_id)
    assert recorder.jobs == [first]
    await svc.redis.delete(lease)

    with caplog.at_level("WARNING", logger="core.runs.watchdog"):
        assert not await watchdog.check(svc, run_id)
        assert not await watchdog.check(svc, run_id)  # within the span: not again
    assert recorder.jobs == [first, first]
    warned = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
    assert len(warned) == 1 and run_id in warned[0] and "agent O " in warned[0]
    await asyncio.sleep(0.35)  # the span passed, still no progress: once more
    assert not await watchdog.check(svc, run_id)
    assert recorder.jobs == [first, first, first]
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING

    # The copies are one turn: the first runs it, the others are dropped.
    assert await run_turn(svc, first) is TurnOutcome.WAITING
    assert await run_turn(svc, first) is TurnOutcome.DROPPED


async def test_a_paused_run_is_not_resubmitted(make_services, any_redis) -> None:
    svc = make_services(_stall_settings(), _deadlock_model(), redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "t", root)

    def pause(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        run.paused = "cost"
        return run, []

    await svc.store.update_run(run_id, pause)
    await asyncio.sleep(0.35)
    assert not await watchdog.check(svc, run_id)
    assert len(recorder.jobs) == 1


async def test_a_request_whose_planning_was_lost_is_planned_again(make_services, any_redis) -> None:
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "4"}),)))
    direct = {"path": "direct", "reason": "a fact", "answer": "4"}
    model.script("router", Reply(calls=(call("submit_router", direct),)))
    settings = _stall_settings().model_copy(
        update={"planning": make_settings().planning.model_copy(update={"library_top_k": 0})}
    )
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    run_id = await request_run(svc, "what is 2 + 2?", requested_by="ana")
    plan = TurnJob(run_id=run_id, kind="plan")
    assert recorder.jobs == [plan]  # and lost: no worker will ever see it
    assert await watchdog.replan_lost(svc) == 0, "too recent to be called lost"
    await asyncio.sleep(0.35)

    claim = svc.store.keys.planning(run_id)
    await svc.redis.set(claim, "1", px=5000)  # a worker is planning it
    assert await watchdog.replan_lost(svc) == 0
    await svc.redis.delete(claim)

    assert await watchdog.replan_lost(svc) == 1
    assert await watchdog.replan_lost(svc) == 0, "once per span"
    assert recorder.jobs == [plan, plan]
    assert (await svc.store.get_run(run_id)).status is RunStatus.PLANNING
    # The copy is planned (the direct path starts the answering agent at once).
    assert await handle(svc, recorder.jobs[-1]) is TurnOutcome.ENDED
    assert (await svc.store.get_run(run_id)).status is RunStatus.RUNNING
