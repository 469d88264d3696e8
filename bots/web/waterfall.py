"""The run's waterfall: one lane per agent on the run's time axis, with its life (created
to ended), its turns, and inside them its model calls and tool calls, as bars placed in
percent of the run's duration (the page draws them as SVG rectangles, no script). Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bots.web.timing import Span, SpanKind, Timings, seconds

# A bar too short to see is drawn this wide, in percent of the axis (its title and
# ``seconds`` say how long it took).
MIN_WIDTH = 0.3
_ORDER: dict[SpanKind, int] = {"life": 0, "wait": 1, "turn": 2, "model": 3, "tool": 4}


@dataclass(frozen=True)
class Bar:
    kind: SpanKind
    # Where it starts and how wide it is, in percent of the axis.
    x: float
    width: float
    seconds: float
    title: str
    ok: bool = True
    measured: bool = True


@dataclass
class Lane:
    agent_id: str
    name: str
    depth: int
    bars: list[Bar]
    # Time spent in turns, and how many.
    busy_s: float = 0.0
    turns: int = 0


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass
class Waterfall:
    seconds: float
    lanes: list[Lane]
    ticks: list[Tick]


def step_for(total: float, most: int = 6) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving at most ``most`` ticks."""
    if total <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(total / most))
    for factor in (1, 2, 5, 10):
        if total / (factor * power) <= most:
            return factor * power
    return 10 * power


def ticks(total: float) -> list[Tick]:
    step = step_for(total)
    count = int(total / step + 1e-9)
    return [
        Tick(i * step / total * 100 if total else 0.0, _tick(i * step)) for i in range(count + 1)
    ]


def _tick(at: float) -> str:
    return "0" if at == 0 else seconds(at)


def _title(span: Span, name: str) -> str:
    took = seconds(span.seconds) + ("" if span.measured else " (estimated)")
    match span.kind:
        case "life":
            return f"{name}: alive {took}"
        case "wait":
            return f"{name}: waited for {span.label} {took}"
        case "turn":
            return f"{name}, turn {span.seq}: {took}"
        case "model":
            return f"{name}, model call ({span.label}): {took}"
        case "tool":
            failed = "" if span.ok else ", failed"
            return f"{name}, {span.label}: {took}{failed}"


def bar(span: Span, start: float, total: float, name: str) -> Bar:
    """``span`` placed on an axis from ``start`` lasting ``total`` seconds."""
    x = min(100.0, max(0.0, (span.start - start) / total * 100)) if total else 0.0
    width = min(100.0 - x, max(MIN_WIDTH, span.seconds / total * 100 if total else 0.0))
    return Bar(span.kind, x, width, span.seconds, _title(span, name), span.ok, span.measured)


def waterfall(t: Timings, agents: Sequence[tuple[str, str, int]]) -> Waterfall | None:
    """One lane per agent of ``agents`` (id, name, depth in the tree; in the order
    shown), or None before the run started."""
    if t.start is None or t.seconds is None:
        return None
    total = t.seconds
    lanes = []
    for agent_id, name, depth in agents:
        spans = sorted(t.of(agent_id), key=lambda s: (_ORDER[s.kind], s.start))
        turns = [s for s in spans if s.kind == "turn"]
        lanes.append(
            Lane(
                agent_id,
                name,
                depth,
                [bar(s, t.start, total, name) for s in spans],
                busy_s=sum(s.seconds for s in turns),
                turns=len(turns),
            )
        )
    return Waterfall(total, lanes, ticks(total))
