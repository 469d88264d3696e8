"""How to publish turns from the event loop: directly, asyncio.to_thread, or a pool.

Publishes N turn messages to a throwaway queue on the real Redis (db 15) in three ways
and prints, for each, the messages per second and the worst stall of the event loop
(measured by a 1 ms ticker running beside the publishers). Cleans up its keys.

    .venv/bin/python bench/publish.py [N]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from redis import Redis

from core.config import load_settings
from core.scheduler.base import TurnJob
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler

URL = os.environ.get("CARAMBA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")


async def ticker(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - t - 0.001)


async def measure(name: str, submit: Callable[[TurnJob], Awaitable[None]], n: int) -> None:
    stop, lags = asyncio.Event(), []
    tick = asyncio.create_task(ticker(stop, lags))
    jobs = [TurnJob(run_id="run_bench", agent_id=f"agt_{i}", seq=0) for i in range(n)]
    sem = asyncio.Semaphore(50)  # 50 turns submitting at once

    async def one(job: TurnJob) -> None:
        async with sem:
            await submit(job)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(j) for j in jobs))
    wall = time.perf_counter() - t0
    stop.set()
    await tick
    print(
        f"{name:<22} {n / wall:7.0f} msg/s   loop lag p50 {statistics.median(lags) * 1e3:5.2f} ms"
        f"   max {max(lags) * 1e3:6.1f} ms"
    )


async def main(n: int) -> None:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    settings = load_settings(redis={"url": URL, "key_prefix": prefix})
    app = make_app(settings)
    sched = CeleryScheduler(app, settings)
    sched.publish(TurnJob(run_id="warm", agent_id="up", seq=0))  # connect once

    async def direct(job: TurnJob) -> None:
        sched.publish(job)

    async def to_thread(job: TurnJob) -> None:
        await asyncio.to_thread(sched.publish, job)

    try:
        await measure("blocking on the loop", direct, n)
        await measure("asyncio.to_thread", to_thread, n)
        await measure("dedicated pool (4)", sched.submit, n)
    finally:
        await sched.aclose()
        r = Redis.from_url(URL)
        keys = list(r.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            r.delete(*keys)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
