"""Agent-to-agent delivery latency over the bus, against a raw Redis round trip.

Real Redis (127.0.0.1:6379, db 15), embedded mode's services as a process runs them (the
inline scheduler and the background loop, ``core.process.embedded``), the real turn loop
and a scripted model with zero latency, so what is measured is Caramba's own overhead:
the sender's save transaction, the wake-up claim, scheduling, and the recipient's turn
start and drain.

    .venv/bin/python bench/bus.py [--pairs 25] [--rounds 20] [--latency-pairs 10]

Last line: ``bench bus: p50_ms=… p99_ms=… redis_rtt_p99_ms=… ratio_p99=… msgs_per_s=…``
where redis_rtt is one raw stream delivery measured in the same run (XADD by one client,
XREADGROUP by another, no Caramba code) and msgs_per_s is agent messages delivered per
second with all pairs talking at once. Latency is measured with one pair at a time (an
idle system): from the sender's model reply (the scripted model answers instantly; the
clock starts once its reply is made, as the answer reaches Caramba) to the recipient's
model call that sees the message. The bench runs on the loop the product's processes run
(``scheduler.event_loop``), the raw round trips too.

``--explain`` prints, for the deliveries at or above the p99 and for all of them, how many
overlapped a tick of the background loop, its recording of ended runs in the agent library
(part of a tick) or a pass of the garbage collector (all on the process's one loop), the
mean latency with and without, and the collections by generation; and where the
deliveries' time went (``bench/bus_explain.py``): the sender's side up to the recipient's
turn scheduled, the scheduler's hop, the recipient's side up to its model call.

Fair to both sides: the process is started and warmed up first (one pair, not
measured), as a worker is before its turns; ``--latency-pairs`` pairs of 50 rounds give
100 deliveries each (1,000 by default, so the p99 is not simply the worst one), and a
batch of raw round trips is measured before each pair, so both figures see the same
moments of the machine's load (2,000 raw samples).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bus_explain import Pauses, pct
from core.config import load_settings
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.process import event_loop
from core.process.embedded import embedded_services
from core.runs.control import start_run
from core.services import Services
from core.types import AgentSpec

# BENCH_REDIS_URL: another Redis (a private redis-server, to read its commandstats alone).
URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")


async def raw_rtt(
    redis: Redis, n: int, spans: list[tuple[float, float]] | None = None
) -> list[float]:
    """``n`` raw round trips in ms (each one's (start, end) added to ``spans``)."""
    stream, group = f"bench-raw-{uuid.uuid4().hex[:6]}", "g"
    await redis.xgroup_create(stream, group, id="0", mkstream=True)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        await redis.xadd(stream, {"m": str(i)})
        await redis.xreadgroup(group, "c", {stream: ">"}, count=1)
        t1 = time.perf_counter()
        samples.append((t1 - t0) * 1000)
        if spans is not None:
            spans.append((t0, t1))
    await redis.delete(stream)
    return samples


@dataclass
class _Stamped(ScriptedModel):
    """The scripted model, calling ``replied`` once its reply is made: a message's clock
    starts there, as the model's answer reaches Caramba (building the reply — its tool
    calls' ids, the prompt's token count over the whole thread — is the model's work)."""

    replied: Callable[[], None] | None = None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await super().complete(request)
        if self.replied is not None:
            self.replied()
        return response


class Brain:
    """The scripted model of every pair: Ping creates Pong, then they exchange ``rounds``
    messages each; records each delivery's latency."""

    def __init__(self) -> None:
        self.rounds = 0
        self.latencies: list[float] = []
        self.spans: list[tuple[float, float]] = []  # each delivery's (sent, seen), perf_counter
        self.sent_at: dict[str, float] = {}
        self.sending: str | None = None  # the token of the reply being made
        self.delivered = 0
        # The scripted model records every request for tests; a bench of thousands of
        # turns would keep every thread in memory (and the collector would walk them).
        self.model = _Stamped(responder=self, replied=self.replied)

    def reset(self, rounds: int) -> None:
        self.rounds, self.latencies, self.delivered, self.spans = rounds, [], 0, []
        self.sent_at.clear()
        self.sending = None

    def replied(self) -> None:
        """The reply is made (no await between the responder and this: nothing else ran)."""
        if self.sending is not None:
            self.sent_at[self.sending] = time.perf_counter()
            self.sending = None

    def __call__(self, request: LLMRequest) -> Reply:
        now = time.perf_counter()
        self.model.requests.clear()
        last = request.messages[-1].content or ""
        if last.startswith("[Message from") or last.startswith("[Result from"):
            token = last.rsplit(" ", 1)[-1]
            if token in self.sent_at:
                at = self.sent_at.pop(token)
                self.latencies.append((now - at) * 1000)
                self.spans.append((at, now))
                self.delivered += 1
        sent = sum(
            c.name == "send_message"
            for m in request.messages
            if m.role == "assistant"
            for c in m.tool_calls
        )
        name = request.agent_name
        if (
            name.startswith("Ping")
            and sent == 0
            and not any(c.name == "create_agent" for m in request.messages for c in m.tool_calls)
        ):
            pong = {
                "name": name.replace("Ping", "Pong"),
                "role": "member",
                "purpose": "Answer every message.",
                "budget_share": 0.5,
            }
            return Reply(calls=(call("create_agent", pong), call("wait_for_messages")))
        if sent >= self.rounds:
            return Reply(calls=(call("finish", {"result": "done"}),))
        token = self.sending = uuid.uuid4().hex
        to = "parent" if name.startswith("Pong") else name.replace("Ping", "Pong")
        return Reply(
            calls=(
                call("send_message", {"to": to, "body": f"ping {token}"}),
                call("wait_for_messages"),
            )
        )


async def talk(svc: Services, brain: Brain, pairs: int, rounds: int) -> float:
    """``pairs`` pairs at once, ``rounds`` messages each way; the wall time."""
    brain.reset(rounds)
    t0 = time.perf_counter()
    for i in range(pairs):
        await start_run(
            svc,
            f"ping-pong {uuid.uuid4().hex[:6]}",
            AgentSpec(
                name=f"Ping {i}",
                role="orchestrator",
                tools=("create_agent", "send_message", "wait_for_messages", "finish"),
            ),
        )
    await svc.scheduler.join()  # type: ignore[attr-defined]
    return time.perf_counter() - t0


async def measure(pairs: int, rounds: int, latency_pairs: int, explain: bool = False) -> None:
    redis = Redis.from_url(URL, decode_responses=True)
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    settings = load_settings(
        redis={"url": URL, "key_prefix": prefix},
        limits={"turns_per_agent": max(rounds, 50) * 2 + 10, "stall_repeats": 50},
        agents={"per_run": pairs * 2 + 5, "children_per_agent": 2},
        scheduler={"inline_concurrency": 64},
    )
    brain = Brain()
    latencies: list[float] = []
    spans: list[tuple[float, float]] = []
    pauses = Pauses() if explain else None
    rtt: list[float] = []
    rtt_spans: list[tuple[float, float]] = []
    cpu = 0.0  # this process's CPU while the pairs talked (load-proof, unlike latency)
    try:
        async with embedded_services(settings, llm=brain.model) as svc:
            await talk(svc, brain, 1, 10)  # warm-up: the first turns, not measured
            # Latency on an idle system (one pair at a time), raw round trips beside it.
            for _ in range(latency_pairs):
                rtt += await raw_rtt(redis, 200, rtt_spans)
                cpu0 = time.process_time()
                await talk(svc, brain, 1, 50)
                cpu += time.process_time() - cpu0
                latencies += brain.latencies
                spans += brain.spans
            # Throughput with many pairs talking at once.
            wall = await talk(svc, brain, pairs, rounds)
            delivered = brain.delivered
    finally:
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
    p50, p99, rtt99 = statistics.median(latencies), pct(latencies, 0.99), pct(rtt, 0.99)
    print(
        f"latency: deliveries={len(latencies)} p50_ms={p50:.2f} p99_ms={p99:.2f} "
        f"max_ms={max(latencies):.2f} cpu_ms_per_delivery={cpu * 1000 / len(latencies):.2f}; "
        f"raw: samples={len(rtt)} p50_ms="
        f"{statistics.median(rtt):.3f} p99_ms={rtt99:.3f}; throughput: pairs={pairs} "
        f"rounds={rounds} delivered={delivered} wall_s={wall:.2f}"
    )
    if pauses is not None:
        print(pauses.report(spans, latencies, rtt_spans))
    print(
        f"bench bus: p50_ms={p50:.2f} p99_ms={p99:.2f} redis_rtt_p99_ms={rtt99:.3f} "
        f"ratio_p99={p99 / rtt99:.1f} msgs_per_s={delivered / wall:.0f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--latency-pairs", type=int, default=10)
    parser.add_argument(
        "--explain",
        action="store_true",
        help="which deliveries overlapped a background tick or a garbage collection",
    )
    args = parser.parse_args()
    # On the loop the product's processes run (``scheduler.event_loop``: uvloop by default);
    # the raw round trips are measured on it too.
    choice = load_settings().scheduler.event_loop
    event_loop.run(measure(args.pairs, args.rounds, args.latency_pairs, args.explain), choice)
