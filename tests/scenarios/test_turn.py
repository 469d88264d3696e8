"""The agent turn with fakeredis and the scripted model."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.agent import turn as turn_module
from core.agent.turn import run_turn
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Fail, Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec, Budget
from core.types.agent import AgentStatus, EndReason
from core.types.events import AgentFinished, ErrorRaised, LLMCalled, RunFinished, ToolCalled
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect, kinds

TOOLS = ("calculate", "current_time", "finish")


def agent(**kw: object) -> AgentSpec:
    return AgentSpec(name="Solo", tools=TOOLS, **kw)  # type: ignore[arg-type]


async def test_run_calls_a_tool_and_finishes(settings, make_services, any_redis) -> None:
    model = ScriptedModel().script(
        "*",
        Reply(calls=(call("calculate", {"expression": "6*7"}),)),
        Reply(calls=(call("finish", {"result": "42"}),)),
    )
    svc = make_services(settings, model, redis=any_redis)
    spec = agent()
    run_id = await start_run(svc, "what is 6*7?", spec)
    events = await collect(svc, run_id)

    assert kinds(events)[:2] == ["run_started", "agent_created"]
    tool_events = [e for e in events if isinstance(e, ToolCalled)]
    assert [(e.tool, e.ok) for e in tool_events] == [("calculate", True), ("finish", True)]
    assert tool_events[0].result == "6*7 = 42"
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "42")
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and run.result == "42"
    assert [t.to_status for t in run.history] == [
        RunStatus.APPROVED,
        RunStatus.RUNNING,
        RunStatus.COMPLETED,
    ]
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.status is AgentStatus.FINISHED and state.seq == 2
    # The model saw the tool's result on its second call.
    assert model.requests[1].messages[-1].content == "6*7 = 42"


async def test_same_turn_delivered_twice_is_applied_once(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel().script("*", Reply(calls=(call("calculate", {"expression": "1+1"}),)))
    svc = make_services(settings, model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    spec = agent()
    run_id = await start_run(svc, "1+1", spec)
    job = recorder.jobs.pop()

    assert await run_turn(svc, job) is TurnOutcome.CONTINUED
    assert await run_turn(svc, job) is TurnOutcome.DROPPED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 1
    assert len(model.requests) == 1  # the duplicate never reached the model
    assert sum(m.role == "tool" for m in state.thread) == 1
    # The first delivery did its follow-ups (scheduled turn 1), so the late duplicate
    # schedules nothing: resubmitting would put a duplicate of every later turn in flight.
    assert [j.seq for j in recorder.jobs] == [1]


class _SlowModel:
    """Both deliveries reach the model before either saves: the save must arbitrate."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        await asyncio.sleep(0.05)
        inner = ScriptedModel().script("*", Reply(calls=(call("calculate", {"expression": "2"}),)))
        return await inner.complete(request)

    async def aclose(self) -> None:
        return None


async def test_concurrent_duplicate_deliveries_save_once(
    settings, make_services, any_redis
) -> None:
    model = _SlowModel()
    svc = make_services(settings, model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    spec = agent()
    run_id = await start_run(svc, "2", spec)
    job = recorder.jobs.pop()

    # A copy that runs although the lease is held (it lapsed: its holder looked dead):
    # the save arbitrates.
    outcomes = await asyncio.gather(run_turn(svc, job), turn_module._run(svc, job))

    assert sorted(outcomes) == sorted([TurnOutcome.CONTINUED, TurnOutcome.DROPPED])
    assert model.calls == 2
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 1
    assert sum(m.role == "tool" for m in state.thread) == 1
    events = await svc.store.read_events(run_id)
    assert sum(isinstance(e, ToolCalled) for _, e in events) == 1
    # Only the saved delivery's tokens count.
    usage = await svc.store.run_usage(run_id)
    assert usage.total_tokens == state.usage.total_tokens


async def test_a_copy_of_a_turn_under_way_waits_for_it_and_pays_nothing(
    settings, make_services, any_redis
) -> None:
    model = _SlowModel()
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    spec = agent()
    run_id = await start_run(svc, "2", spec)
    job = recorder.jobs.pop()

    outcomes = await asyncio.gather(run_turn(svc, job), run_turn(svc, job))

    assert sorted(outcomes) == sorted([TurnOutcome.CONTINUED, TurnOutcome.DROPPED])
    assert model.calls == 1, "the copy waited for the lease and found the turn saved"
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 1


async def test_bad_calls_are_fed_back_then_the_turn_cap_ends_the_run(
    make_services, any_redis
) -> None:
    settings = make_settings(
        limits={"turns_per_agent": 6, "stall_repeats": 5}, agents={"text_reply": "nudge"}
    )
    model = ScriptedModel().script(
        "*",
        Reply(calls=(call("calculate", '{"expression": "1+'),)),  # malformed JSON
        Reply(calls=(call("calculate", {"expr": "1"}),)),  # wrong argument name
        Reply(calls=(call("browse_web", {"url": "x"}),)),  # unknown tool
    )
    # Never a tool, never the same text twice (that would be a stall).
    model.responder = lambda req: Reply(content=f"Maybe {len(req.messages)}.")
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "1+1", agent())
    events = await collect(svc, run_id)

    fed_back = [e.result for e in events if isinstance(e, ToolCalled)]
    assert "not valid JSON" in fed_back[0]
    assert "expression: Field required" in fed_back[1]
    assert 'no tool named "browse_web"' in fed_back[2] and "calculate" in fed_back[2]
    no_tool = [r.messages[-1].content or "" for r in model.requests[4:]]
    assert all("without calling a tool" in text for text in no_tool)
    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.MAX_TURNS
    assert "6 turns" in finished.detail and "limit 6" in finished.detail
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED
    assert final.error == finished.detail
    error = next(e for e in events if isinstance(e, ErrorRaised))
    assert "turns_per_agent" in error.hint
    assert len(model.requests) == 6


async def test_stall_detector_stops_a_repeated_call(make_services, any_redis) -> None:
    settings = make_settings(limits={"stall_repeats": 3})
    model = ScriptedModel(
        responder=lambda _r: Reply(calls=(call("current_time", {"timezone": "UTC"}),))
    )
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "time?", agent())
    events = await collect(svc, run_id)

    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.STALLED
    assert 'current_time({"timezone": "UTC"})' in finished.detail
    assert len(model.requests) == 3


async def test_agent_token_budget_ends_the_agent(make_services, settings, any_redis) -> None:
    model = ScriptedModel(
        responder=lambda r: Reply(
            calls=(call("calculate", {"expression": str(len(r.messages))}),),
            prompt_tokens=400,
            completion_tokens=100,
        )
    )
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "count", agent(budget=Budget(max_tokens=1200)))
    events = await collect(svc, run_id)

    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.MAX_TOKENS
    # Checked before each call (prompt estimated from the last call, answer bounded by
    # max_tokens): the agent stops within its limit instead of one call past it.
    assert finished.tokens == 1000 and "agent limit 1,200" in finished.detail
    assert len(model.requests) == 2
    first, second = model.requests
    assert first.max_tokens == 1200  # no answer may take more than the whole budget
    assert second.max_tokens is not None and second.max_tokens <= 1200 - 500 - 400


async def test_run_cost_cap_ends_the_run(make_services, any_redis) -> None:
    settings = make_settings(limits={"cost_per_run_usd": 0.05})
    model = ScriptedModel(
        cost_per_call_usd=0.02,
        responder=lambda r: Reply(calls=(call("calculate", {"expression": str(len(r.messages))}),)),
    )
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "spend", agent())
    events = await collect(svc, run_id)

    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.MAX_COST
    assert len(model.requests) == 3
    assert abs((await svc.store.run_usage(run_id)).cost_usd - 0.06) < 1e-9


async def test_tokens_and_cost_are_accounted_per_agent_and_run(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel(cost_per_call_usd=0.001).script(
        "*",
        Reply(
            calls=(call("calculate", {"expression": "1"}),), prompt_tokens=100, completion_tokens=10
        ),
        Reply(calls=(call("finish", {"result": "done"}),), prompt_tokens=150, completion_tokens=20),
    )
    svc = make_services(settings, model, redis=any_redis)
    spec = agent()
    run_id = await start_run(svc, "t", spec)
    events = await collect(svc, run_id)

    llm_events = [e for e in events if isinstance(e, LLMCalled)]
    assert [(e.prompt_tokens, e.completion_tokens) for e in llm_events] == [(100, 10), (150, 20)]
    assert llm_events[-1].agent_tokens == 280
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None
    assert (state.usage.prompt_tokens, state.usage.completion_tokens) == (250, 30)
    assert abs(state.usage.cost_usd - 0.002) < 1e-12
    run_usage = await svc.store.run_usage(run_id)
    assert run_usage.total_tokens == 280 and abs(run_usage.cost_usd - 0.002) < 1e-12
    final = events[-1]
    assert isinstance(final, RunFinished) and final.tokens == 280


async def test_llm_failure_ends_the_run_with_a_clear_error(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel().script("*", Fail("upstream exploded", status=500))
    svc = make_services(settings, model, redis=any_redis)
    run_id = await start_run(svc, "t", agent())
    events = await collect(svc, run_id)

    error = next(e for e in events if isinstance(e, ErrorRaised))
    assert "HTTP 500" in error.message and "upstream exploded" in error.message
    assert "caramba doctor" in error.hint
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED


async def test_the_run_deadline_pauses_the_run_for_a_person(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel()
    svc = make_services(settings, model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    spec = agent()
    run_id = await start_run(svc, "t", spec)

    def expire(run):  # type: ignore[no-untyped-def]
        new = run.model_copy(update={"deadline_at": time.time() - 1})
        return new, []

    await svc.store.update_run(run_id, expire)
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.PARKED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 0 and not state.status.terminal
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.WAITING_HUMAN and run.paused == "wall_clock"
    assert model.requests == []
    reached = [e for _, e in await svc.store.read_events(run_id) if e.kind == "budget_reached"]
    assert len(reached) == 1 and "wall-clock" in reached[0].detail


async def test_a_turn_that_keeps_crashing_is_quarantined(make_services, any_redis) -> None:
    settings = make_settings(limits={"max_deliveries": 5, "max_crashes": 2})
    model = ScriptedModel()
    svc = make_services(settings, model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    spec = agent()
    run_id = await start_run(svc, "t", spec)
    job = recorder.jobs.pop()
    # Two deliveries that died before saving (the counter is bumped at turn start).
    await svc.store.count_delivery(run_id, spec.id, 0)
    await svc.store.count_delivery(run_id, spec.id, 0)

    assert await run_turn(svc, job) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.QUARANTINED
    assert "3 times" in state.end_detail and "limits.max_crashes" in state.end_detail


async def _finishing_agent(make_services, any_redis) -> tuple[Any, AgentSpec, TurnJob]:
    """An agent that finishes in its first turn, under 2 failures / 10 deaths; its job."""
    settings = make_settings(limits={"max_deliveries": 2, "max_crashes": 10})
    model = ScriptedModel().script("*", Reply(calls=(call("finish", {"result": "done"}),)))
    svc = make_services(settings, model, redis=any_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    spec = agent()
    await start_run(svc, "t", spec)
    return svc, spec, recorder.jobs.pop()


async def test_worker_deaths_are_not_the_turns_failures(make_services, any_redis) -> None:
    """Before: a crash loop of workers (a deploy, kills elsewhere) that hit one turn
    max_deliveries times quarantined a healthy turn that had never reached the model.
    Deaths now have their own, larger budget; failures (the turn raised) keep theirs."""
    svc, spec, job = await _finishing_agent(make_services, any_redis)
    run_id = job.run_id
    for _ in range(5):  # five deliveries whose worker died (the counter is bumped at start)
        await svc.store.count_delivery(run_id, spec.id, 0)

    assert await run_turn(svc, job) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.FINISHED, state.end_detail


async def test_a_turn_that_keeps_raising_is_quarantined_at_max_deliveries(
    make_services, any_redis
) -> None:
    svc, spec, job = await _finishing_agent(make_services, any_redis)
    run_id = job.run_id

    async def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    original = svc.llm.complete
    svc.llm.complete = broken  # type: ignore[method-assign]
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await run_turn(svc, job)
    svc.llm.complete = original  # type: ignore[method-assign]
    assert await run_turn(svc, job) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.QUARANTINED
    assert "failed 2 times" in state.end_detail and "limits.max_deliveries" in state.end_detail


async def test_long_tool_results_are_truncated(make_services, any_redis) -> None:
    settings = make_settings(limits={"tool_result_chars": 200})
    model = ScriptedModel().script(
        "*",
        Reply(calls=(call("calculate", {"expression": "9**300"}),)),
        Reply(calls=(call("finish", {"result": "big"}),)),
    )
    svc = make_services(settings, model, redis=any_redis)
    spec = agent()
    run_id = await start_run(svc, "t", spec)
    await collect(svc, run_id)
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None
    tool_msg = next(m for m in state.thread if m.role == "tool")
    assert tool_msg.content is not None and "truncated" in tool_msg.content
    assert len(tool_msg.content) < 260


async def test_an_agent_calling_roster_for_ever_is_stopped_as_stalled(
    make_services, any_redis
) -> None:
    """No tool is exempt from the stall detector: roster again and again, with nothing
    arriving in between, is a loop (it used to run to the turn cap)."""
    settings = make_settings(limits={"stall_repeats": 3, "turns_per_agent": 30})
    model = ScriptedModel(responder=lambda _r: Reply(calls=(call("roster", {}),)))
    svc = make_services(settings, model, redis=any_redis)
    spec = AgentSpec(name="Solo", tools=("roster", "finish"))
    run_id = await start_run(svc, "who is here?", spec)
    events = await collect(svc, run_id)

    finished = next(e for e in events if isinstance(e, AgentFinished))
    assert finished.reason is EndReason.STALLED
    assert "roster({})" in finished.detail
    assert len(model.requests) == 3
