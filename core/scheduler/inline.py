"""The in-process scheduler for embedded mode and unit tests: asyncio tasks, no services."""

from __future__ import annotations

import asyncio
import logging

from core.scheduler.base import TurnHandler, TurnJob

log = logging.getLogger(__name__)


class InlineScheduler:
    """Runs turns on this event loop with at most ``concurrency`` at once."""

    def __init__(self, concurrency: int = 16) -> None:
        # None is the stop sentinel: a worker that lost a cancellation (some libraries
        # swallow one) still ends when it takes it.
        self._queue: asyncio.Queue[TurnJob | None] = asyncio.Queue()
        self._concurrency = concurrency
        self._workers: list[asyncio.Task[None]] = []
        self._handler: TurnHandler | None = None

    def start(self, handler: TurnHandler) -> None:
        if self._workers:
            raise RuntimeError("InlineScheduler already started")
        self._handler = handler
        self._workers = [
            asyncio.create_task(self._work(), name=f"caramba-turns-{i}")
            for i in range(self._concurrency)
        ]

    async def submit(self, job: TurnJob) -> None:
        await self._queue.put(job)

    async def join(self) -> None:
        """Wait until every submitted turn (and the turns they submitted) has run."""
        await self._queue.join()

    async def stop(self) -> None:
        for w in self._workers:
            w.cancel()
        for _ in self._workers:
            self._queue.put_nowait(None)
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    async def _work(self) -> None:
        assert self._handler is not None
        while True:
            job = await self._queue.get()
            if job is None:
                self._queue.task_done()
                return
            try:
                await self._handler(job)
            except asyncio.CancelledError:
                raise
            except Exception:
                # The turn function turns failures into events; this is a bug backstop.
                log.exception("turn %s failed unexpectedly", job)
            finally:
                self._queue.task_done()
