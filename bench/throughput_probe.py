"""What bench/throughput.py measures with and waits on: processes' CPU and memory from
/proc, the end of runs (without taking the workers' CPU or Redis's; one run's end read as
Redis records it), the workers held off
while runs are approved (Celery's remote control), and bounded gathering."""

from __future__ import annotations

import asyncio
import os
import re
import resource
import time
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from tests.fakes.llm_server import ThreadedFakeLLMServer

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def others_cpu_s(redis_pid: int) -> tuple[float, float]:
    """This process's CPU (the fake model server and the bench) and the Redis server's."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    try:
        redis_cpu = cpu_s(redis_pid)
    except (OSError, ValueError):
        redis_cpu = float("nan")
    return own.ru_utime + own.ru_stime, redis_cpu


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def wait_all(
    redis: Redis,
    prefix: str,
    run_ids: list[str],
    timeout_s: float,
    calls: tuple[ThreadedFakeLLMServer, int] | None = None,
) -> None:
    """Until every run has ended. The bench must not take the workers' CPU or Redis's to
    find out: with ``calls`` (the fake and how many model calls the runs make in all), it
    first waits for the fake to have served them (no Redis at all), then reads the runs'
    heads every 5 ms until they have ended (their last turns' saves come a moment after
    their last calls). Before, it read all 1,000 heads every 0.5 s: about ten GETs per
    turn in Redis and their parsing in this process, beside the fake. One run (the
    cohort) is waited for on its event log (:func:`_wait_one`)."""
    deadline = time.monotonic() + timeout_s
    if len(run_ids) == 1 and calls is None:
        await _wait_one(redis, prefix, run_ids[0], timeout_s)
        return
    if calls is not None:
        server, wanted = calls
        for _ in range(int(timeout_s * 100)):  # a list's length: nothing else is read
            if len(server.requests) >= wanted:
                break
            await asyncio.sleep(0.01)
    pending = list(run_ids)
    while pending:
        async with redis.pipeline(transaction=False) as pipe:
            for run_id in pending:
                pipe.get(f"{prefix}:run:{run_id}:head")  # its status, not the whole record
            raws = await pipe.execute()
        pending = [
            r
            for r, raw in zip(pending, raws, strict=True)
            if not re.search(r'"status":"(completed|failed|cancelled)"', raw or "")
        ]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} runs unfinished after {timeout_s} s")
        await asyncio.sleep(0.005)


async def _wait_one(redis: Redis, prefix: str, run_id: str, timeout_s: float) -> None:
    """Until the run's event log says it ended: a blocking read of its stream (no polling:
    the bench sees the end when Redis has it, not up to a poll's interval later)."""
    key, last = f"{prefix}:run:{run_id}:events", "0-0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reply: Any = await redis.xread({key: last}, block=1000, count=500)
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                last = entry_id
                if '"kind":"run_finished"' in next(iter(fields.values()), ""):
                    return
    raise TimeoutError(f"run {run_id} unfinished after {timeout_s} s")


def consume(app: Any, queue: str, on: bool, workers: int) -> None:
    """Have every worker stop (or start again) taking turns from ``queue`` (Celery's
    remote control); returns once all ``workers`` replied (without ``limit`` Celery
    waits out the whole time-out, and the agents ran meanwhile, unmeasured)."""
    control = app.control.add_consumer if on else app.control.cancel_consumer
    replies = control(queue, reply=True, timeout=5, limit=workers)
    if len(replies or ()) < workers:
        raise RuntimeError(f"{len(replies or ())} of {workers} workers answered")


async def bounded(coros: list[Any], limit: int = 50) -> list[Any]:
    """gather with at most ``limit`` at once: the Redis pool has 100 connections."""
    gate = asyncio.Semaphore(limit)

    async def one(coro: Any) -> Any:
        async with gate:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros))
