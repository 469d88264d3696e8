"""People deciding about runs: approve (once), reject, cancel, extend a paused run or stop
it, answer an agent's question — with the inline scheduler, on fakeredis and real Redis."""

from __future__ import annotations

import asyncio

from core.agent.questions import answer_question, open_questions
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import budget, control
from core.types import AgentSpec
from core.types.agent import AgentStatus, EndReason
from core.types.events import (
    AgentFinished,
    BudgetReached,
    QuestionAsked,
    QuestionClosed,
    RunFinished,
    RunStarted,
    RunStatusChanged,
)
from core.types.run import RunBudget, RunStatus
from tests.conftest import make_settings
from tests.helpers import collect
from tests.scenarios import ORCHESTRATOR_TOOLS, calls_made, texts
from tests.schedulers import SCHEDULERS


def solo(*tools: str) -> AgentSpec:
    return AgentSpec(name="Solo", role="solo", tools=(*tools, "finish"))


async def _events_of(svc, run_id):  # type: ignore[no-untyped-def]
    return [e for _, e in await svc.store.read_events(run_id, count=10_000)]


async def _until(predicate, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await predicate():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


@SCHEDULERS
async def test_concurrent_approvals_start_one_run(settings, services, kind) -> None:
    svc = await services(settings, ScriptedModel())
    run_id = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    assert (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED

    results = await asyncio.gather(*(control.approve_run(svc, run_id, f"@u{i}") for i in range(5)))
    assert sum(r.ok for r in results) == 1
    refused = [r.reason for r in results if not r.ok]
    assert all("it cannot be approved now" in reason for reason in refused)
    events = await collect(svc, run_id)
    assert sum(isinstance(e, RunStarted) for e in events) == 1
    assert len(await svc.store.agent_ids(run_id)) == 1
    assert events[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]


@SCHEDULERS
async def test_illegal_decisions_are_refused(settings, services, kind) -> None:
    svc = await services(settings, ScriptedModel())
    run_id = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    assert (await control.cancel_run(svc, run_id, "@ana")).ok
    late = await control.approve_run(svc, run_id, "@bob")
    assert not late.ok and "this run was cancelled; it cannot be approved now" in late.reason
    assert (await svc.store.agent_ids(run_id)) == []

    other = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    assert (await control.reject_run(svc, other, "@bob", "too expensive")).ok
    run = await svc.store.get_run(other)
    assert run.status is RunStatus.REJECTED and run.history[-1].note == "too expensive"
    assert not (await control.cancel_run(svc, other, "@ana")).ok
    assert not (await budget.extend_run(svc, other, "@ana")).ok


def _busy_team() -> ScriptedModel:
    """An orchestrator with two helpers that never finish on their own."""

    def respond(r: LLMRequest) -> Reply:
        if r.agent_name == "Orchestrator":
            if calls_made(r, "create_agent") == 0:
                return Reply(
                    calls=(
                        call("create_agent", {"name": "H1", "role": "judge", "purpose": "loop"}),
                        call("create_agent", {"name": "H2", "role": "judge", "purpose": "loop"}),
                        call("wait_for_messages"),
                    )
                )
            return Reply(calls=(call("wait_for_messages"),))
        n = calls_made(r, "calculate")
        return Reply(calls=(call("calculate", {"expression": f"{n} + 1"}),))

    return ScriptedModel(responder=respond)


@SCHEDULERS
async def test_cancel_stops_a_running_cohort(services, kind) -> None:
    settings = make_settings(limits={"turns_per_agent": 10_000, "stall_repeats": 50})
    model = _busy_team()
    svc = await services(settings, model)
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=ORCHESTRATOR_TOOLS)
    run_id = await control.propose_run(svc, "loop forever", root, requested_by="@ana")
    assert (await control.approve_run(svc, run_id, "@ana")).ok

    async def helpers_busy() -> bool:
        return sum(r.agent_name in ("H1", "H2") for r in model.requests) >= 10

    await _until(helpers_busy)
    step = await control.cancel_run(svc, run_id, "@ana", "changed my mind")
    assert step.ok and step.run.status is RunStatus.CANCELLED
    events = await collect(svc, run_id)
    final = [e for e in events if isinstance(e, RunFinished)]
    assert len(final) == 1 and final[0].status is RunStatus.CANCELLED

    async def all_stopped() -> bool:
        states = [await svc.store.load_spec(run_id, a) for a in await svc.store.agent_ids(run_id)]
        return all(s is not None and s[1].terminal for s in states)

    await _until(all_stopped)
    ended = [e for e in await _events_of(svc, run_id) if isinstance(e, AgentFinished)]
    assert {e.reason for e in ended} == {EndReason.CANCELLED} and len(ended) == 3
    calls = len(model.requests)
    await asyncio.sleep(0.2)
    assert len(model.requests) == calls, "no model call after every agent stopped"


def _spender() -> ScriptedModel:
    """Spends 1,000 tokens per turn; finishes on its 4th turn."""

    def respond(r: LLMRequest) -> Reply:
        n = calls_made(r, "calculate")
        if n >= 3:
            return Reply(calls=(call("finish", {"result": f"done after {n}"}),), prompt_tokens=900)
        return Reply(
            calls=(call("calculate", {"expression": f"{n} * 2"}),),
            prompt_tokens=900,
            completion_tokens=100,
        )

    return ScriptedModel(responder=respond)


@SCHEDULERS
async def test_a_run_at_its_budget_pauses_then_resumes_on_extension(
    settings, services, kind
) -> None:
    model = _spender()
    svc = await services(settings, model)
    run_id = await control.propose_run(
        svc,
        "spend",
        solo("calculate"),
        requested_by="@ana",
        budget=RunBudget(tokens=2000, cost_usd=1.0, wall_clock_s=600),
    )
    assert (await control.approve_run(svc, run_id, "@ana")).ok

    async def paused() -> bool:
        run = await svc.store.get_run(run_id)
        parked = await svc.redis.smembers(svc.store.keys.parked(run_id))
        return run.paused == "tokens" and bool(parked)

    await _until(paused)
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.WAITING_HUMAN
    assert len(model.requests) == 2  # 2,000 tokens spent, then nothing more
    reached = [e for e in await _events_of(svc, run_id) if isinstance(e, BudgetReached)]
    assert len(reached) == 1 and reached[0].tokens == 2000 and reached[0].extend_tokens > 0
    state = await svc.store.load_agent(run_id, run.root_agent_id)  # type: ignore[arg-type]
    assert state is not None and not state.status.terminal

    step = await budget.extend_run(svc, run_id, "@ana", tokens=5000)
    assert step.ok and step.run.budget.tokens == 7000  # type: ignore[union-attr]
    events = await collect(svc, run_id)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED
    assert final.result == "done after 3" and len(model.requests) == 4
    statuses = [e.status for e in events if isinstance(e, RunStatusChanged)]
    assert statuses == [RunStatus.WAITING_HUMAN, RunStatus.RUNNING]


@SCHEDULERS
async def test_refusing_an_extension_ends_the_run_with_the_results_so_far(
    settings, services, kind
) -> None:
    def respond(r: LLMRequest) -> Reply:
        if r.agent_name == "Orchestrator":
            if calls_made(r, "create_agent") == 0:
                return Reply(
                    calls=(
                        call("create_agent", {"name": "Quick", "role": "judge", "purpose": "q"}),
                        call("create_agent", {"name": "Slow", "role": "judge", "purpose": "s"}),
                        call("wait_for_messages"),
                    ),
                    prompt_tokens=10,
                )
            return Reply(calls=(call("wait_for_messages"),), prompt_tokens=10)
        if r.agent_name == "Quick":
            return Reply(calls=(call("finish", {"result": "quick answer"}),), prompt_tokens=10)
        n = calls_made(r, "calculate")
        return Reply(calls=(call("calculate", {"expression": f"{n}+1"}),), prompt_tokens=400)

    svc = await services(settings, ScriptedModel(responder=respond))
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=ORCHESTRATOR_TOOLS)
    run_id = await control.propose_run(
        svc,
        "t",
        root,
        requested_by="@ana",
        budget=RunBudget(tokens=1500, cost_usd=1.0, wall_clock_s=600),
    )
    assert (await control.approve_run(svc, run_id, "@ana")).ok

    async def paused() -> bool:
        return (await svc.store.get_run(run_id)).paused is not None

    await _until(paused)
    step = await budget.stop_run(svc, run_id, "@ana")
    assert step.ok
    final = (await collect(svc, run_id))[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED
    assert final.result == "Quick: quick answer"
    assert "extension refused by @ana" in (final.error or "")


@SCHEDULERS
async def test_ask_user_waits_for_an_answer_without_a_worker(settings, services, kind) -> None:
    def respond(r: LLMRequest) -> Reply:
        replies = texts(r, "[Reply from")
        if not replies:
            return Reply(calls=(call("ask_user", {"question": "BER or a nearby airport?"}),))
        return Reply(calls=(call("finish", {"result": replies[0].splitlines()[1]}),))

    model = ScriptedModel(responder=respond)
    svc = await services(settings, model)
    run_id = await control.propose_run(svc, "fly", solo("ask_user"), requested_by="@ana")
    assert (await control.approve_run(svc, run_id, "@ana")).ok

    async def asked() -> bool:
        return bool(await open_questions(svc, run_id))

    await _until(asked)
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.WAITING_HUMAN
    found = await svc.store.load_spec(run_id, run.root_agent_id)  # type: ignore[arg-type]
    assert found is not None and found[1] is AgentStatus.WAITING_HUMAN
    assert len(model.requests) == 1

    step = await answer_question(svc, run_id, "BER, please", by="@ana")
    assert step.ok
    again = await answer_question(svc, run_id, "second answer", by="@bob")
    # Refused: the question is closed (a fast worker may even have ended the run by now).
    assert not again.ok
    reason = again.reason
    assert "nobody in this run is waiting for an answer" in reason or "already finished" in reason
    events = await collect(svc, run_id)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED
    assert final.result == "BER, please"
    asked_events = [e for e in events if isinstance(e, QuestionAsked)]
    closed = [e for e in events if isinstance(e, QuestionClosed)]
    assert len(asked_events) == 1 and asked_events[0].question == "BER or a nearby airport?"
    assert len(closed) == 1 and closed[0].by == "@ana" and not closed[0].timed_out


@SCHEDULERS
async def test_an_unanswered_question_times_out_and_the_agent_goes_on(services, kind) -> None:
    from core.process.background import run_background

    settings = make_settings(
        humans={"question_timeout_s": 0.3}, scheduler={"background_interval_s": 0.05}
    )

    def respond(r: LLMRequest) -> Reply:
        notes = texts(r, "[No answer in the chat]")
        if not notes:
            return Reply(calls=(call("ask_user", {"question": "Which colour?"}),))
        return Reply(calls=(call("finish", {"result": "assumed blue"}),))

    svc = await services(settings, ScriptedModel(responder=respond))
    stop = asyncio.Event()
    background = asyncio.create_task(run_background(svc, stop))
    try:
        run_id = await control.propose_run(svc, "paint", solo("ask_user"), requested_by="@ana")
        assert (await control.approve_run(svc, run_id, "@ana")).ok
        events = await collect(svc, run_id, timeout_s=10)
    finally:
        stop.set()
        await background
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result == "assumed blue"
    closed = [e for e in events if isinstance(e, QuestionClosed)]
    assert len(closed) == 1 and closed[0].timed_out
    assert await open_questions(svc, run_id) == []
