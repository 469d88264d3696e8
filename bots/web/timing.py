"""How long things took in a run, from its events: the run, each turn, each model call
and each tool call, as spans on one clock (the workers' wall clock, seconds since the
epoch). Pure: no I/O.

A turn spans from its start to the end of its last model or tool call. Events stored
before calls carried ``started_at`` and ``duration_s`` still read: a model call is then
taken to have run from its turn's start to when it answered (``estimated``), a tool call
is shown as an instant at the time its turn's tools were done."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from core.types.agent import EndReason
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ApprovalAsked,
    ApprovalDecided,
    FormAsked,
    FormClosed,
    LLMCalled,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    ToolCalled,
    TurnStarted,
)

SpanKind = Literal["life", "wait", "turn", "model", "tool"]


@dataclass
class Span:
    """Something an agent did from ``start`` to ``end``."""

    kind: SpanKind
    agent_id: str
    seq: int
    start: float
    end: float
    label: str = ""
    ok: bool = True
    # False when the start was not recorded (an older event): the span is a guess.
    measured: bool = True

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Timings:
    """The run's spans, and when it started and ended (``end`` is "now" for a run
    still under way, ``finished`` False)."""

    start: float | None = None
    end: float | None = None
    finished: bool = False
    spans: list[Span] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, self.end - self.start)

    def of(self, agent_id: str, kind: SpanKind | None = None) -> list[Span]:
        return [s for s in self.spans if s.agent_id == agent_id and kind in (None, s.kind)]

    def turn(self, agent_id: str, seq: int) -> Span | None:
        found = [s for s in self.of(agent_id, "turn") if s.seq == seq]
        return found[0] if found else None

    def calls(self, agent_id: str, seq: int, kind: SpanKind) -> list[Span]:
        """The agent's model or tool calls of turn ``seq``, in the order they were saved."""
        return [s for s in self.of(agent_id, kind) if s.seq == seq]


def model_span(event: LLMCalled, turn_start: float | None) -> Span:
    agent = event.agent_id or ""
    if event.started_at is not None and event.duration_s is not None:
        end = event.started_at + event.duration_s
        return Span("model", agent, event.seq, event.started_at, end, event.model)
    start = turn_start if turn_start is not None and turn_start <= event.at else event.at
    return Span("model", agent, event.seq, start, event.at, event.model, measured=False)


def tool_span(event: ToolCalled) -> Span:
    agent = event.agent_id or ""
    if event.started_at is not None and event.duration_s is not None:
        end = event.started_at + event.duration_s
        return Span("tool", agent, event.seq, event.started_at, end, event.tool, event.ok)
    return Span("tool", agent, event.seq, event.at, event.at, event.tool, event.ok, False)


def timings(events: Iterable[RunEvent], now: float) -> Timings:
    """The spans of ``events`` (one run's, in stream order); ``now`` ends what is still
    under way (an agent alive, a run not finished)."""
    out = Timings()
    turns: dict[tuple[str, int], Span] = {}
    lives: dict[str, Span] = {}
    waits: dict[str, Span] = {}
    last = None
    for event in events:
        last = event.at if last is None else max(last, event.at)
        agent = event.agent_id or ""
        if _waits(event, waits, now):
            continue
        match event:
            case RunStarted():
                out.start = event.at if out.start is None else min(out.start, event.at)
            case RunFinished():
                out.end, out.finished = event.at, True
            case AgentCreated():
                lives[agent] = Span("life", agent, 0, event.at, now, event.name)
            case AgentFinished() if agent in lives:
                lives[agent].end = event.at
                lives[agent].ok = event.reason is EndReason.FINISHED
            case TurnStarted():
                turns[(agent, event.seq)] = Span("turn", agent, event.seq, event.at, event.at)
                out.spans.append(turns[(agent, event.seq)])
            case LLMCalled() | ToolCalled():
                turn = turns.get((agent, event.seq))
                if isinstance(event, LLMCalled):
                    span = model_span(event, turn.start if turn else None)
                else:
                    span = tool_span(event)
                out.spans.append(span)
                if turn is not None:
                    # An approved call runs before its turn's request is built.
                    turn.start = min(turn.start, span.start)
                    turn.end = max(turn.end, span.end)
                    turn.ok = turn.ok and span.ok
    out.spans[:0] = [*lives.values(), *waits.values()]
    _close(out, last, now)
    return out


def _waits(event: RunEvent, waits: dict[str, Span], now: float) -> bool:
    """Opens or closes a wait for a person (a question, an approval, a form): True when
    ``event`` was one of those."""
    agent = event.agent_id or ""
    match event:
        case QuestionAsked():
            waits[event.question_id] = Span("wait", agent, 0, event.at, now, "an answer")
        case ApprovalAsked():
            label = f"approval of {event.request.tool}"
            waits[event.request.id] = Span("wait", event.request.agent_id, 0, event.at, now, label)
        case FormAsked():
            waits[event.form_id] = Span("wait", agent, 0, event.at, now, f"a form ({event.server})")
        case QuestionClosed() | ApprovalDecided() | FormClosed():
            key = event.approval_id if isinstance(event, ApprovalDecided) else _closed_id(event)
            if key in waits:
                waits[key].end = event.at
        case _:
            return False
    return True


def _closed_id(event: QuestionClosed | FormClosed) -> str:
    return event.question_id if isinstance(event, QuestionClosed) else event.form_id


def _close(out: Timings, last: float | None, now: float) -> None:
    """The run's ends: its start (else its first span's), its end (else now); an agent
    still alive at the run's end lives until then."""
    if out.start is None and out.spans:
        out.start = min(s.start for s in out.spans)
    if out.end is None and out.start is not None:
        out.end = max(now, last or now)
    if out.finished and out.end is not None:
        for span in out.spans:
            if span.kind in ("life", "wait") and span.end > out.end:
                span.end = out.end


def seconds(value: float | None) -> str:
    """A duration as people read it: ``<1 ms``, ``230 ms``, ``2.4 s``, ``3 min 05 s``,
    ``1 h 02 min``; an em dash when unknown."""
    if value is None:
        return "—"
    if value < 0.001:
        return "<1 ms"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 10:
        return f"{value:.2f} s"
    if value < 60:
        return f"{value:.1f} s"
    whole = round(value)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
