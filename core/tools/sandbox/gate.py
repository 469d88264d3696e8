"""At most ``sandbox.max_concurrent`` sandboxes at once in this process: a call past that
waits for a free one (it does not fail). A worker runs many turns at once on one event
loop; each sandbox holds a tmpfs, processes and CPU, so the number is bounded here.

One semaphore per event loop and limit (a worker has one loop; tests make a loop each).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _gate(limit: int) -> asyncio.Semaphore:
    per_loop = _gates.setdefault(asyncio.get_running_loop(), {})
    if limit not in per_loop:
        per_loop[limit] = asyncio.Semaphore(limit)
    return per_loop[limit]


@contextlib.asynccontextmanager
async def slot(limit: int) -> AsyncIterator[float]:
    """Hold one of ``limit`` places while the block runs; yields the seconds waited."""
    gate = _gate(limit)
    started = time.monotonic()
    async with gate:
        yield time.monotonic() - started
