"""Agent-to-agent delivery latency over the bus, against a raw Redis round trip.

Real Redis (127.0.0.1:6379, db 15), the inline scheduler, the real turn loop and a scripted
model with zero latency, so what is measured is Caramba's own overhead: the sender's save
transaction, the wake-up claim, scheduling, and the recipient's turn start and drain.

    .venv/bin/python bench/bus.py [--pairs 25] [--rounds 20]

Last line: ``bench bus: p50_ms=… p99_ms=… redis_rtt_p99_ms=… ratio_p99=… msgs_per_s=…``
where redis_rtt is one raw stream delivery measured in the same run (XADD by one client,
XREADGROUP by another, no Caramba code) and msgs_per_s is agent messages delivered per
second with all pairs talking at once. Latency is measured with one pair (an idle system):
from the sender's model reply (the scripted model answers instantly) to the recipient's
model call that sees the message.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from redis.asyncio import Redis

from core.config import load_settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.jobs import handle
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler.inline import InlineScheduler
from core.types import AgentSpec

URL = "redis://127.0.0.1:6379/15"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def raw_rtt(redis: Redis, n: int = 2000) -> list[float]:
    stream, group = f"bench-raw-{uuid.uuid4().hex[:6]}", "g"
    await redis.xgroup_create(stream, group, id="0", mkstream=True)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        await redis.xadd(stream, {"m": str(i)})
        await redis.xreadgroup(group, "c", {stream: ">"}, count=1)
        samples.append((time.perf_counter() - t0) * 1000)
    await redis.delete(stream)
    return samples


async def measure(pairs: int, rounds: int) -> tuple[list[float], int, float, list[float]]:
    redis = Redis.from_url(URL, decode_responses=True)
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    settings = load_settings(
        redis={"url": URL, "key_prefix": prefix},
        limits={"turns_per_agent": rounds * 2 + 10, "stall_repeats": 50},
        agents={"per_run": pairs * 2 + 5, "children_per_agent": 2},
    )
    latencies: list[float] = []
    sent_at: dict[str, float] = {}
    delivered = 0

    def brain(request: LLMRequest) -> Reply:
        nonlocal delivered
        now = time.perf_counter()
        last = request.messages[-1].content or ""
        if last.startswith("[Message from") or last.startswith("[Result from"):
            token = last.rsplit(" ", 1)[-1]
            if token in sent_at:
                latencies.append((now - sent_at.pop(token)) * 1000)
                delivered += 1
        sent = sum(
            c.name == "send_message"
            for m in request.messages
            if m.role == "assistant"
            for c in m.tool_calls
        )
        if (
            request.agent_name.startswith("Ping")
            and sent == 0
            and not any(c.name == "create_agent" for m in request.messages for c in m.tool_calls)
        ):
            return Reply(
                calls=(
                    call(
                        "create_agent",
                        {
                            "name": request.agent_name.replace("Ping", "Pong"),
                            "role": "member",
                            "purpose": "Answer every message.",
                            "budget_share": 0.5,
                        },
                    ),
                    call("wait_for_messages"),
                )
            )
        if sent >= rounds:
            return Reply(calls=(call("finish", {"result": "done"}),))
        token = uuid.uuid4().hex
        sent_at[token] = time.perf_counter()
        return Reply(
            calls=(
                call(
                    "send_message",
                    {
                        "to": "parent"
                        if request.agent_name.startswith("Pong")
                        else request.agent_name.replace("Ping", "Pong"),
                        "body": f"ping {token}",
                    },
                ),
                call("wait_for_messages"),
            )
        )

    scheduler = InlineScheduler(64)
    svc = build_services(settings, scheduler, llm=ScriptedModel(responder=brain))
    scheduler.start(lambda job: handle(svc, job))
    rtt = await raw_rtt(redis)
    t0 = time.perf_counter()
    for i in range(pairs):
        await start_run(
            svc,
            f"ping-pong {i}",
            AgentSpec(
                name=f"Ping {i}",
                role="orchestrator",
                tools=("create_agent", "send_message", "wait_for_messages", "finish"),
            ),
        )
    await scheduler.join()
    wall = time.perf_counter() - t0
    await scheduler.stop()
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await redis.delete(*keys)
    await svc.aclose()
    await redis.aclose()

    print(
        f"pairs={pairs} rounds={rounds} delivered={delivered} wall_s={wall:.2f} "
        f"latency_p50_ms={statistics.median(latencies):.2f} "
        f"latency_p99_ms={pct(latencies, 0.99):.2f} raw_rtt_p99_ms={pct(rtt, 0.99):.3f}"
    )
    return latencies, delivered, wall, rtt


async def main(pairs: int, rounds: int) -> None:
    # Latency on an idle system (one pair), throughput with many pairs talking at once.
    latencies, _, _, rtt = await measure(1, 50)
    _, delivered, wall, _ = await measure(pairs, rounds)
    p50, p99 = statistics.median(latencies), pct(latencies, 0.99)
    rtt99 = pct(rtt, 0.99)
    print(
        f"bench bus: p50_ms={p50:.2f} p99_ms={p99:.2f} redis_rtt_p99_ms={rtt99:.3f} "
        f"ratio_p99={p99 / rtt99:.1f} msgs_per_s={delivered / wall:.0f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.pairs, args.rounds))
