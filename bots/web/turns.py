"""An agent's turns as the inspector shows them: what it received, what it said, the
tools it called with their arguments and results (from its thread, whole), and how long
each took (from the run's events).

The n-th answer in the thread is the agent's n-th model call (``LLMCalled``), counted
from the end when the events stream was trimmed; the tool calls of that answer are the
``ToolCalled`` events of the same turn, matched by tool name in order. A call a person
approved later has a second ``ToolCalled`` in the turn it ran in: it gives the call its
real outcome and time."""

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
    turn.model_s = made.duration_s
    whole = t.turn(agent_id, made.seq)
    if whole is not None:
        turn.seconds = whole.seconds
        if made.duration_s is None:
            turn.model_s, turn.model_estimated = model_span(made, whole.start).seconds, True


def _match_tools(out: list[TurnView], tools: Sequence[ToolCalled]) -> None:
    """Each call's outcome and time from its turn's events, matched by tool name in
    order. A turn with more events of a tool than calls to it ran a call a person approved
    (its event comes first): that one settles the latest earlier call of the tool."""
    by_seq: dict[int, list[ToolCalled]] = {}
    for event in tools:
        by_seq.setdefault(event.seq, []).append(event)
    seen: list[ToolCallView] = []
    for turn in out:
        left = by_seq.pop(turn.seq, []) if turn.seq is not None else []
        for name in {e.tool for e in left}:
            extra = sum(e.tool == name for e in left) - sum(c.name == name for c in turn.calls)
            settling = [e for e in left if e.tool == name][: max(0, extra)]
            held = [v for v in seen if v.name == name][-len(settling) :] if settling else []
            for view, event in zip(held, settling, strict=False):
                _apply(view, event)
            for event in settling:
                left.remove(event)
        for view in turn.calls:
            found = next((e for e in left if e.tool == view.name), None)
            if found is not None:
                _apply(view, found)
                left.remove(found)
        seen.extend(turn.calls)


def _apply(view: ToolCallView, event: ToolCalled) -> None:
    view.ok = event.ok
    view.seconds = event.duration_s
