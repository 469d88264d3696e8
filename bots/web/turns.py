"""An agent's turns as the inspector shows them: what it received, what it said, the
tools it called with their arguments and results (from its thread, whole), and how long
each took (from the run's events).

The n-th answer in the thread is the agent's n-th model call (``LLMCalled``), counted
from the end when the events stream was trimmed; the tool calls of that answer are the
``ToolCalled`` events of the same turn, matched by tool name in order. A call held for a
person's approval has a second ``ToolCalled`` in the turn it ran in (the woken turn runs
it before its model call): that one gives the call its real outcome and time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bots.web.timing import Timings, model_span
from core.types.agent import AgentState
from core.types.events import LLMCalled, ToolCalled


@dataclass
class ToolCallView:
    id: str
    name: str
    arguments: str
    result: str | None = None
    ok: bool | None = None
    seconds: float | None = None
    # Its outcome came from a later turn (it waited for a person's approval).
    settled: bool = False


@dataclass
class TurnView:
    number: int
    text: str | None
    calls: list[ToolCallView]
    # What reached the agent before this call: messages, answers, notes.
    received: list[str]
    model: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    seq: int | None = None
    # The turn's and its model call's duration (None when unknown).
    seconds: float | None = None
    model_s: float | None = None
    model_estimated: bool = False
    model_started: float | None = None


def turns(
    state: AgentState, calls: Sequence[LLMCalled], tools: Sequence[ToolCalled], t: Timings
) -> list[TurnView]:
    """The agent's thread as turns, with the times of ``calls`` and ``tools`` (its own
    events, in stream order) and of its turns in ``t``."""
    out: list[TurnView] = []
    received: list[str] = []
    by_call: dict[str, ToolCallView] = {}
    for message in state.thread:
        if message.role == "system":
            continue
        if message.role == "user":
            received.append(message.content or "")
        elif message.role == "assistant":
            views = [ToolCallView(c.id, c.name, c.arguments) for c in message.tool_calls]
            by_call.update({v.id: v for v in views})
            out.append(TurnView(len(out) + 1, message.content, views, received))
            received = []
        elif message.role == "tool" and message.tool_call_id in by_call:
            by_call[message.tool_call_id].result = message.content
    # Aligned from the end: a trimmed stream lost the oldest events, never the newest.
    for turn, made in zip(reversed(out), reversed(calls), strict=False):
        _timed(turn, made, t, state.spec.id)
    _match_tools(out, tools)
    if received and out:
        # Arrived after its last answer (a result it never read: it had finished).
        out.append(TurnView(len(out) + 1, None, [], received))
    return out


def _timed(turn: TurnView, made: LLMCalled, t: Timings, agent_id: str) -> None:
    turn.seq = made.seq
    turn.model = made.model
    turn.tokens = made.prompt_tokens + made.completion_tokens
    turn.cost_usd = made.cost_usd
    turn.model_s, turn.model_started = made.duration_s, made.started_at
    whole = t.turn(agent_id, made.seq)
    if whole is not None:
        turn.seconds = whole.seconds
        if made.duration_s is None:
            turn.model_s, turn.model_estimated = model_span(made, whole.start).seconds, True


def _match_tools(out: list[TurnView], tools: Sequence[ToolCalled]) -> None:
    """Each call's outcome and time from its turn's events, matched by tool name in
    order. An event of a turn that started before the turn's model call ran a call an
    earlier turn held for a person's approval: it settles the latest such call."""
    by_seq: dict[int, list[ToolCalled]] = {}
    for event in tools:
        by_seq.setdefault(event.seq, []).append(event)
    seen: list[ToolCallView] = []
    for turn in out:
        left = by_seq.pop(turn.seq, []) if turn.seq is not None else []
        for event in [e for e in left if _before(e, turn.model_started)]:
            held = [v for v in seen if v.name == event.tool and not v.settled]
            if held:
                _apply(held[-1], event)
                held[-1].settled = True
            left.remove(event)
        for view in turn.calls:
            found = next((e for e in left if e.tool == view.name), None)
            if found is not None:
                _apply(view, found)
                left.remove(found)
        seen.extend(turn.calls)


def _before(event: ToolCalled, model_started: float | None) -> bool:
    """Whether the call started before the turn's model call (so it was not one of the
    calls that model call asked for)."""
    if event.started_at is None or model_started is None:
        return False
    return event.started_at < model_started


def _apply(view: ToolCallView, event: ToolCalled) -> None:
    view.ok = event.ok
    view.seconds = event.duration_s
