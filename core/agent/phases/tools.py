"""Run tools: the calls the model asked for, run through the tool registry — together
when every one of them is read-only (they only look things up), one after another in the
model's order otherwise; a call that needs a person's approval waits for one
(``core.agent.approvals``). Results join the thread and the events in the model's order,
whichever finished first. A reply that called no tool is handled here too
(``core.agent.text_reply``). Returns :class:`~core.agent.phases.current.Ran`.

May call the tool registry (through the services), ``core.agent`` (limits, text_reply,
faults) and telemetry; never the Redis client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import NamedTuple

from core import telemetry
from core.agent import approvals, faults, limits, text_reply
from core.agent.phases.current import Called, Ran, Ready, Turn
from core.agent.turn_io import clip
from core.types.chat import ChatMessage, ToolCall
from core.types.events import ToolCalled


class Outcome(NamedTuple):
    """A call's outcome, and when it started and how long it ran (for the inspector)."""

    ok: bool
    content: str
    started_at: float
    duration_s: float


def _instant(ok: bool, content: str) -> Outcome:
    """An outcome that took no time (a call held for approval, or not run)."""
    return Outcome(ok, content, time.time(), 0.0)


async def run(turn: Turn, ready: Ready, called: Called) -> Ran:
    svc, state, calls = turn.svc, turn.state, called.response.tool_calls
    text_end = None
    if not calls:
        text_end = await text_reply.on_text(
            svc, turn.io.ctx, ready.request.model, ready.allowed, ready.rung
        )
    repeats = svc.settings.limits.stall_repeats
    stalled = False
    for one in calls:
        stalled = limits.note_call(state.recent_calls, one, repeats) or stalled
        del state.recent_calls[:-repeats]  # (the last ``repeats`` kept)
    text = called.response.content or ""
    results = await _execute_all(turn, ready, calls, text)
    for one, outcome in zip(calls, results, strict=True):
        _record(turn, one, outcome)
    if calls and turn.io.ctx.images:  # images tools returned, for a model that sees them
        turn.state.thread[-1].images = tuple(url for _, url in turn.io.ctx.images)
        turn.io.ctx.images.clear()
    await faults.point(svc, "after_tools")
    return Ran(stalled, text_end)


def all_read_only(turn: Turn, calls: Sequence[ToolCall], allowed: Sequence[str]) -> bool:
    """True when every call names a tool of the agent's that only looks things up."""
    found = [turn.svc.tools.get(c.name) if c.name in allowed else None for c in calls]
    return all(t is not None and t.read_only for t in found)


async def _execute_all(
    turn: Turn, ready: Ready, calls: Sequence[ToolCall], text: str
) -> list[Outcome]:
    """Every call's outcome, in the model's order. A call that needs a person's
    approval does not run (``core.agent.approvals``): a note stands in its place, and
    the calls after it are not run either."""
    gated = await approvals.first_gated(turn.io, calls, ready.allowed)
    if gated is not None:
        done = [await _execute(turn, ready, c) for c in calls[:gated]]
        waiting = calls[gated]
        held = _instant(True, approvals.hold(turn.io, waiting, gated, text))
        rest = [_instant(False, approvals.not_run(turn.io, waiting)) for _ in calls[gated + 1 :]]
        return [*done, held, *rest]
    if len(calls) > 1 and all_read_only(turn, calls, ready.allowed):
        # A TaskGroup: should one raise, the others are cancelled, not left running.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_execute(turn, ready, c)) for c in calls]
        return [t.result() for t in tasks]
    return [await _execute(turn, ready, c) for c in calls]


async def _execute(turn: Turn, ready: Ready, call: ToolCall) -> Outcome:
    svc = turn.svc
    called_at, started = telemetry.clock(), time.time()
    result = await svc.tools.execute(
        turn.io.ctx, call, ready.allowed, svc.prompts, svc.settings.limits.tool_result_chars
    )
    telemetry.tool_called(call, result.ok, result.content, called_at)
    return Outcome(result.ok, result.content, started, time.time() - started)


def _record(turn: Turn, call: ToolCall, outcome: Outcome) -> None:
    """The result joins the thread and the turn's events."""
    content = outcome.content
    turn.state.thread.append(
        ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=content)
    )
    turn.events.append(
        ToolCalled(
            run_id=turn.job.run_id,
            agent_id=turn.job.agent_id,
            seq=turn.job.seq,
            tool=call.name,
            arguments=clip(call.arguments) or "",
            ok=outcome.ok,
            result=clip(content) or "",
            started_at=outcome.started_at,
            duration_s=outcome.duration_s,
        )
    )
