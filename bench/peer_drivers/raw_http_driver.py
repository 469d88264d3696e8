"""The floor: ``count`` bare HTTP calls (aiohttp, one session, 20 at a time) of one
request to the fake model, the JSON encoded and the answer decoded; prints the CPU."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

import aiohttp
import common


async def bare_calls(
    url: str,
    body: dict[str, object],
    count: int,
    concurrency: int = 20,
    clock: Callable[[], float] = common.cpu_s,
) -> float:
    """The CPU (``clock``) of ``count`` bare calls, ``concurrency`` at a time, after one
    unmeasured (also ``bench/llm_client.py``'s floor)."""
    async with aiohttp.ClientSession() as session:
        gate = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with gate:
                data = json.dumps(body).encode()
                async with session.post(
                    f"{url}/chat/completions",
                    data=data,
                    headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
                ) as response:
                    json.loads(await response.read())

        await one()
        cpu0 = clock()
        await asyncio.gather(*(one() for _ in range(count)))
        return clock() - cpu0


async def main(url: str, body: dict[str, object], count: int) -> None:
    spent = await bare_calls(url, body, count)
    print("BENCH " + json.dumps({"cpu_s": spent, "rss_mb": common.rss_mb()}), flush=True)


if __name__ == "__main__":
    request = json.loads(Path(sys.argv[2]).read_text())
    asyncio.run(main(sys.argv[1], request, int(sys.argv[3])))
