"""What one Redis round trip costs the client: the process's client as configured
(``core.process.wiring.connect_redis``: no per-command time-out, dead servers found by
TCP) against the same pool with redis-py's default ``socket_timeout`` (5 s: every send
in ``asyncio.wait_for``), alternating, best of ``--rounds``.

    .venv/bin/python bench/redis_client.py [--calls 3000] [--rounds 7]

Prints CPU µs per GET for each and
``bench redis_client: configured_us=… default_timeout_us=… ratio=…``. Needs Redis on
127.0.0.1:6379 (db 15, cleans up its key).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redis.asyncio import BlockingConnectionPool, Redis  # noqa: E402

from core.config import load_settings  # noqa: E402
from core.process.wiring import connect_redis  # noqa: E402

URL = "redis://127.0.0.1:6379/15"
KEY = "bench:redis_client"


async def cpu_us_per_get(client: Redis, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        await client.get(KEY)
    return (time.process_time() - start) / calls * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    configured = connect_redis(load_settings(redis={"url": URL}))
    kwargs = dict(configured.connection_pool.connection_kwargs)
    kwargs["socket_timeout"] = 5.0  # redis-py's default
    timed = Redis(
        connection_pool=BlockingConnectionPool(
            connection_class=configured.connection_pool.connection_class,
            max_connections=8,
            **kwargs,
        )
    )
    await configured.set(KEY, "x" * 64)
    best = {"configured": float("inf"), "default_timeout": float("inf")}
    try:
        for client in (configured, timed):  # warm up
            await cpu_us_per_get(client, 500)
        for _ in range(opts.rounds):
            for name, client in (("configured", configured), ("default_timeout", timed)):
                best[name] = min(best[name], await cpu_us_per_get(client, opts.calls))
    finally:
        await configured.delete(KEY)
        await configured.aclose()
        await timed.aclose()
    for name, value in best.items():
        print(f"{name:<16}{value:>8.1f} µs CPU per GET")
    print(
        f"bench redis_client: configured_us={best['configured']:.1f} "
        f"default_timeout_us={best['default_timeout']:.1f} "
        f"ratio={best['configured'] / best['default_timeout']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
