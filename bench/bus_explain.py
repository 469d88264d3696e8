"""``bench/bus.py --explain``: what else ran on the loop while deliveries were measured
(background ticks, the library's recording of ended runs, garbage collections), and where a
delivery's time went: the sender's side (its tools, resolve and save script, up to the
scheduling of the recipient's turn), the scheduler's hop (submit to the turn's start) and
the recipient's side (its lease and start script, prepare, up to its model call). Since the
save that wakes one agent starts its turn too (``core.state.turn_ahead_wake``), the start
script's round trip is part of the sender's save, and the recipient's side mostly prepare."""

from __future__ import annotations

import bisect
import gc
import statistics
import time
from typing import Any

from core.process import background, embedded
from core.scheduler.base import TurnJob
from core.scheduler.inline import InlineScheduler
from core.services import Services


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Pauses:
    """What else ran on the loop while deliveries were measured (``--explain``): the
    background loop's ticks and the garbage collector's passes, as (start, end) spans."""

    def __init__(self) -> None:
        self.ticks: list[tuple[float, float]] = []
        self.learning: list[tuple[float, float]] = []  # ended runs put in the library
        self.gcs: list[tuple[float, float]] = []
        self.gc_ms: dict[int, list[float]] = {0: [], 1: [], 2: []}  # by generation
        self._gc_start = 0.0
        inner = background.tick

        async def tick(svc: Services, *rest: Any) -> tuple[bool, float | None]:
            t0 = time.perf_counter()
            try:
                return await inner(svc, *rest)
            finally:
                self.ticks.append((t0, time.perf_counter()))

        background.tick = tick  # type: ignore[assignment]
        learn = background.learn_ended

        async def learn_ended(svc: Services) -> int:
            t0 = time.perf_counter()
            try:
                return await learn(svc)
            finally:
                self.learning.append((t0, time.perf_counter()))

        background.learn_ended = learn_ended  # type: ignore[assignment]
        gc.callbacks.append(self._gc)
        # When turns were scheduled and when they started (perf_counter, in order).
        self.submits: list[float] = []
        self.starts: list[float] = []
        submit, handle = InlineScheduler.submit, embedded.handle

        async def submitted(scheduler: InlineScheduler, job: TurnJob) -> None:
            self.submits.append(time.perf_counter())
            await submit(scheduler, job)

        async def started(svc: Services, job: TurnJob) -> Any:
            self.starts.append(time.perf_counter())
            return await handle(svc, job)

        InlineScheduler.submit = submitted  # type: ignore[method-assign,assignment]
        embedded.handle = started  # type: ignore[assignment]

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gcs.append((self._gc_start, time.perf_counter()))
            self.gc_ms[info["generation"]].append((self.gcs[-1][1] - self._gc_start) * 1000)

    def report(
        self,
        spans: list[tuple[float, float]],
        latencies: list[float],
        raw_spans: list[tuple[float, float]],
    ) -> str:
        """Of the deliveries at or above the p99, and of all: how many overlapped a tick
        or a collection, and the mean latency with and without; and how many of the raw
        round trips (the ratio's other side) overlapped each."""

        def hit(span: tuple[float, float], pauses: list[tuple[float, float]]) -> bool:
            return any(a < span[1] and b > span[0] for a, b in pauses)

        p99 = pct(latencies, 0.99)
        slow = [s for s, lat in zip(spans, latencies, strict=True) if lat >= p99]
        parts = []
        named = (("tick", self.ticks), ("learning", self.learning), ("gc", self.gcs))
        for name, pauses in named:
            with_it = [lat for s, lat in zip(spans, latencies, strict=True) if hit(s, pauses)]
            without = [lat for s, lat in zip(spans, latencies, strict=True) if not hit(s, pauses)]
            mean_ms = statistics.fmean([(b - a) * 1000 for a, b in pauses]) if pauses else 0.0
            parts.append(
                f"{name}: n={len(pauses)} mean_ms={mean_ms:.2f} slowest_hit="
                f"{sum(hit(s, pauses) for s in slow)}/{len(slow)} all_hit={len(with_it)}/"
                f"{len(spans)} mean_lat_with={statistics.fmean(with_it) if with_it else 0:.2f} "
                f"without={statistics.fmean(without) if without else 0:.2f} "
                f"raw_hit={sum(hit(r, pauses) for r in raw_spans)}/{len(raw_spans)}"
            )
        by_gen = " ".join(
            f"gen{g}: n={len(v)} max_ms={max(v, default=0):.2f}" for g, v in self.gc_ms.items()
        )
        # The raw p99 of the round trips no tick overlapped (the loop's own work on them
        # makes the ratio's other side slower: the ratio against these too).
        clean = [(b - a) * 1000 for a, b in raw_spans if not hit((a, b), self.ticks)]
        raw99 = pct(clean, 0.99) if clean else 0.0
        untouched = (
            f"raw_untouched_by_ticks: n={len(clean)} p99_ms={raw99:.3f} "
            f"ratio_p99={p99 / raw99 if raw99 else 0:.1f}"
        )
        return (
            "explain: "
            + "; ".join(parts)
            + f"; collections {by_gen}; {untouched}\n"
            + self.segments(spans, latencies, p99)
        )

    def segments(self, spans: list[tuple[float, float]], latencies: list[float], p99: float) -> str:
        """Where the deliveries' time went (mean ms), of all and of those at or above the
        p99: sender (its reply to the recipient's turn scheduled: tools, resolve, the
        save script), hop (scheduled to started) and recipient (started to its model
        call: lease and start script, prepare)."""
        rows: list[tuple[float, float, float, float]] = []
        for (sent, seen), lat in zip(spans, latencies, strict=True):
            i = bisect.bisect_left(self.submits, sent)
            j = bisect.bisect_left(self.starts, self.submits[i]) if i < len(self.submits) else -1
            if 0 <= j < len(self.starts) and self.starts[j] <= seen:
                sub, go = self.submits[i], self.starts[j]
                rows.append((lat, (sub - sent) * 1000, (go - sub) * 1000, (seen - go) * 1000))

        def mean(of: list[tuple[float, float, float, float]]) -> str:
            if not of:
                return "n=0"
            m = [statistics.fmean(r[k] for r in of) for k in range(1, 4)]
            return f"n={len(of)} sender_ms={m[0]:.2f} hop_ms={m[1]:.3f} recipient_ms={m[2]:.2f}"

        slow = [r for r in rows if r[0] >= p99]
        return f"segments: all: {mean(rows)}; at_or_above_p99: {mean(slow)}"
