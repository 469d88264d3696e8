"""The agent turn: load → drain inbox → one LLM call → tools → save atomically → next.

Turns are idempotent by sequence number: a job whose ``seq`` is not the agent's current
one is dropped, and the save is a compare-and-set on ``seq`` that also sends the turn's
messages, creates its agents and acknowledges the messages it read, so a turn delivered
twice (a retrying broker, a crashed worker, a double submit) is applied once.
"""

from __future__ import annotations

import contextlib
import logging
import time

from core import telemetry
from core.agent import calls, faults, limits, questions, responses, text_reply
from core.agent.lease import turn_lease
from core.agent.lifecycle import end_agent
from core.agent.limits import limits_for
from core.agent.quarantine import quarantine_reason
from core.agent.turn_io import TurnIO, clip
from core.agent.wake import redo_followups
from core.agent.workspace_note import workspace_note
from core.errors import LLMError
from core.llm.base import LLMRequest
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.state.store import chain
from core.types.agent import AgentStatus, EndReason
from core.types.chat import ChatMessage, Usage
from core.types.events import LLMCalled, RunEvent, ToolCalled, TurnStarted

log = logging.getLogger(__name__)


async def run_turn(svc: Services, job: TurnJob) -> TurnOutcome:
    """Run one turn of one agent. Safe to call twice with one job, at once or later."""
    async with turn_lease(svc, job.run_id, job.agent_id, job.seq) as held:
        if not held:
            log.info("turn %s: another delivery is running it; dropped", job)
            return TurnOutcome.DROPPED
        with telemetry.turn(job.run_id, job.agent_id, job.seq) as traced:
            try:
                return traced.outcome(await _run(svc, job))
            except Exception:
                # A failure, not a death: counted apart (limits.max_deliveries against
                # limits.max_crashes). Best effort: the error is what matters here.
                with contextlib.suppress(Exception):
                    await svc.store.count_delivery(job.run_id, job.agent_id, job.seq, failed=True)
                raise


async def _run(svc: Services, job: TurnJob) -> TurnOutcome:
    store = svc.store
    state, run, deliveries, failures, run_usage, raw_saved = await store.turn_start(
        job.run_id, job.agent_id, job.seq
    )
    telemetry.turn_read(run.traceparent, state)
    if state is None:
        log.warning("turn %s: unknown agent, dropped", job)
        return TurnOutcome.DROPPED
    if state.status.terminal or state.seq != job.seq:
        # Saved by a delivery whose worker may have died before its follow-ups (new
        # agents' first turns, wake-ups, the next turn): redo them if they are pending.
        redone = state.seq == job.seq + 1 and await redo_followups(
            svc, job.run_id, job.agent_id, job.seq
        )
        if (
            not redone
            and state.status.waiting
            and await svc.bus.release_stale_wake(job.run_id, job.agent_id, job.seq)
        ):
            # A wake-up claimed for an older turn: release it and look at the mail again.
            await TurnIO(svc, state).spurious_wake()
        return TurnOutcome.DROPPED

    expected = state.seq
    io = TurnIO(svc, state)
    caps = limits_for(svc.settings, state)

    early_end: tuple[EndReason, str] | None = None
    if run.status.terminal:
        early_end = (EndReason.CANCELLED, f"the run is {run.status.value}")
    elif why := quarantine_reason(svc.settings.limits, job.seq, deliveries, failures):
        early_end = (EndReason.QUARANTINED, why)
    if early_end is not None:
        if early_end[0] is EndReason.QUARANTINED:
            await io.quarantine()
        return await _save_end(io, expected, [], Usage(), *early_end)

    limit_hit = limits.breach(run, run_usage, time.time())
    if run.paused or limit_hit is not None:
        if await limits.hold(svc, job, None if run.paused else limit_hit, run_usage):
            return TurnOutcome.PARKED

    # An earlier delivery of this turn saved the model's answer: read the messages it read
    # (pending), not newer ones, so the request is the same and the answer is reused.
    saved = responses.parse(raw_saved)
    arrived = await io.drain(pending_only=saved is not None)
    if state.open_question is not None:
        arrived += await io.close_question(state.open_question)
    if arrived:
        # News since the last call: repeating a call now is not a loop (limits.note_call).
        state.recent_calls = []
    if state.status.waiting and not arrived and not io.dead:
        await io.spurious_wake()
        return TurnOutcome.DROPPED

    # Saved with the turn (its first event), not written on its own: one round trip less.
    started: list[RunEvent] = [TurnStarted(run_id=job.run_id, agent_id=job.agent_id, seq=job.seq)]
    state.status = AgentStatus.RUNNING
    spec = state.spec
    allowed = [n for n in spec.tools if n in svc.tools]
    model = spec.model or svc.settings.llm.model_for(spec.role)
    note = await workspace_note(svc, job.run_id, allowed)
    request = LLMRequest(
        model=model,
        messages=(*state.thread, note) if note is not None else tuple(state.thread),
        tools=tuple(t.openai_schema() for t in svc.tools.subset(allowed)),
        run_id=job.run_id,
        agent_id=job.agent_id,
        agent_name=spec.name,
    )
    request, rung = await text_reply.offer(svc, request)
    chars = limits.prompt_chars(request.messages, request.tools)
    budget = calls.bound(svc, state, caps, run, run_usage, chars)
    if budget.agent_over is not None:
        return await _save_end(
            io, expected, started, Usage(), EndReason.MAX_TOKENS, budget.agent_over
        )
    if budget.run_over is not None and await limits.hold(svc, job, budget.run_over, run_usage):
        return TurnOutcome.PARKED
    request = request.model_copy(
        update={"max_tokens": max(budget.max_tokens, calls.MIN_ANSWER_TOKENS)}
    )
    called_at = telemetry.clock()
    try:
        response, reused, head = await calls.complete_turn(svc, request, job.seq, saved)
    except LLMError as exc:
        telemetry.model_failed(request, exc, called_at)
        return await _save_end(io, expected, started, Usage(), EndReason.LLM_ERROR, str(exc))
    except TimeoutError as exc:
        telemetry.model_failed(request, exc, called_at)
        detail = f"the model did not answer within {calls.llm_deadline(svc):.0f} s (with retries)"
        return await _save_end(io, expected, started, Usage(), EndReason.LLM_ERROR, detail)
    telemetry.model_called(request, response, called_at, reused)
    response = await text_reply.read(svc, model, response, allowed)
    if reused:
        log.info("turn %s: reused the answer an earlier delivery saved", job)
    await faults.point(svc, "after_llm")
    if head is None:
        head = await store.run_head(job.run_id)
    if head.status.terminal:
        # Cancelled while the model was thinking: stop before any tool runs.
        state.usage = state.usage + response.usage
        return await _save_end(
            io, expected, started, response.usage, EndReason.CANCELLED, "the run was cancelled"
        )

    usage = response.usage
    state.usage = state.usage + usage
    if usage.prompt_tokens:
        state.prompt_sample = (usage.prompt_tokens, chars)
    events: list[RunEvent] = [
        *started,
        LLMCalled(
            run_id=job.run_id,
            agent_id=job.agent_id,
            seq=job.seq,
            model=response.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            agent_tokens=state.usage.total_tokens,
            agent_cost_usd=state.usage.cost_usd,
            text=clip(response.content),
        ),
    ]
    state.thread.append(response.as_message())

    ctx = io.ctx
    stalled = False
    text_end = None
    if not response.tool_calls:
        text_end = await text_reply.on_text(svc, ctx, model, allowed, rung)
    repeats = svc.settings.limits.stall_repeats
    for call in response.tool_calls:
        stalled = limits.note_call(state.recent_calls, call, repeats) or stalled
        state.recent_calls = state.recent_calls[-repeats:]
        called_at = telemetry.clock()
        result = await svc.tools.execute(
            ctx, call, allowed, svc.prompts, svc.settings.limits.tool_result_chars
        )
        telemetry.tool_called(call, result.ok, result.content, called_at)
        state.thread.append(
            ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=result.content)
        )
        events.append(
            ToolCalled(
                run_id=job.run_id,
                agent_id=job.agent_id,
                seq=job.seq,
                tool=call.name,
                arguments=clip(call.arguments) or "",
                ok=result.ok,
                result=clip(result.content) or "",
            )
        )
    await faults.point(svc, "after_tools")
    state.seq = expected + 1
    state.children = [*state.children, *(c.spec.id for c in ctx.spawned)]

    run_usage = run_usage + usage
    end: tuple[EndReason, str] | None = None
    if ctx.finish_result is not None:
        state.result = ctx.finish_result
        end = (EndReason.FINISHED, "")
    elif text_end is not None:
        end = text_end
    elif stalled:
        end = (
            EndReason.STALLED,
            f"repeated the same call {svc.settings.limits.stall_repeats} times in a row: "
            f"{state.recent_calls[-1][:200]}",
        )
    elif state.usage.total_tokens >= caps.max_tokens:
        end = (
            EndReason.MAX_TOKENS,
            f"used {state.usage.total_tokens} tokens (agent limit {caps.max_tokens})",
        )
    elif state.usage.cost_usd >= caps.max_cost_usd:
        end = (
            EndReason.MAX_COST,
            f"spent ${state.usage.cost_usd:.4f} (agent limit ${caps.max_cost_usd:.4f})",
        )
    elif state.seq >= caps.max_turns:
        end = (
            EndReason.MAX_TURNS,
            f"took {state.seq} turns without calling finish (limit {caps.max_turns})",
        )
    if end is not None:
        return await _save_end(io, expected, events, usage, *end)

    # The run's own limits pause it for a person to extend, rather than end agents.
    limit_hit = limits.breach(run, run_usage, time.time())
    pause = None if limit_hit is None else limits.pause_change(svc, limit_hit, run_usage)
    asked = None
    if ctx.question is not None:
        now = time.time()
        io.question = questions.OpenQuestion(
            id=questions.question_id(state.spec.id, expected),
            run_id=job.run_id,
            agent_id=state.spec.id,
            question=ctx.question,
            asked_at=now,
            deadline=now + svc.settings.humans.question_timeout_s,
        )
        state.open_question = io.question.id
        asked = questions.asked_change(io.question)

    state.status = (
        AgentStatus.WAITING_HUMAN
        if ctx.question is not None
        else AgentStatus.WAITING
        if ctx.wait
        else AgentStatus.RUNNING
    )
    state.updated_at = time.time()
    commit = await store.commit_turn(
        state,
        expected,
        [*events, *io.events()],
        usage,
        run_change=chain(pause, asked),
        writes=io.writes(),
    )
    if not commit.saved:
        return TurnOutcome.DROPPED
    await faults.point(svc, "after_commit")
    await io.after_commit()  # schedules the next turn too (a follow-up)
    return TurnOutcome.WAITING if ctx.wait else TurnOutcome.CONTINUED


async def _save_end(
    io: TurnIO, expected: int, events: list[RunEvent], usage: Usage, reason: EndReason, detail: str
) -> TurnOutcome:
    io.state.seq = expected + 1
    io.state.children = list(
        dict.fromkeys([*io.state.children, *(c.spec.id for c in io.ctx.spawned)])
    )
    saved = await end_agent(io, expected, events, usage, reason, detail)
    if saved:
        await faults.point(io.svc, "after_commit")
        await io.after_commit()
    return TurnOutcome.ENDED if saved else TurnOutcome.DROPPED
