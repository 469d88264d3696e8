"""The in-process scheduler for embedded mode and unit tests: asyncio tasks, no services."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from core.scheduler.base import IdleWatchers, TurnHandler, TurnJob

log = logging.getLogger(__name__)


class InlineScheduler:
    """Runs turns on this event loop with at most ``concurrency`` at once."""

    def __init__(
        self,
        concurrency: int = 16,
        *,
        max_retries: int = 6,
        retry_delay_s: float = 0.05,
        retry_cap_s: float = 5.0,
    ) -> None:
        # None is the stop sentinel: a worker that lost a cancellation (some libraries
        # swallow one) still ends when it takes it.
        self._queue: asyncio.Queue[TurnJob | None] = asyncio.Queue()
        self._concurrency = concurrency
        self._workers: list[asyncio.Task[None]] = []
        self._handler: TurnHandler | None = None
        self._max_retries = max_retries
        self._retry_delay_s = retry_delay_s
        self._retry_cap_s = retry_cap_s
        self._failures: dict[TurnJob, int] = {}
        self._retries: set[asyncio.Task[None]] = set()
        self._active = 0  # turns the handler is running now
        self._idle = IdleWatchers()

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

    def running(self) -> bool:
        """Whether a turn is running or queued here (one waiting to be retried is not)."""
        return self._active > 0 or self._queue.qsize() > 0

    def free(self) -> bool:
        """Whether a turn submitted now would start at once (a worker idle, none queued)."""
        return self._active + self._queue.qsize() < self._concurrency

    def watch_idle(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` each time the last running turn ended with none queued."""
        return self._idle.watch(callback)

    async def join(self) -> None:
        """Wait until every submitted turn (and the turns they submitted) has run."""
        await self._queue.join()

    async def stop(self) -> None:
        for r in self._retries:
            r.cancel()
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
            self._active += 1
            try:
                await self._handler(job)
                self._failures.pop(job, None)
            except asyncio.CancelledError:
                self._queue.task_done()
                raise
            except Exception:
                # A turn that raised (Redis went away, a bug) is run again, like a broker
                # redelivery: the turn counts its deliveries and quarantines one that
                # keeps failing, so this ends.
                failures = self._failures[job] = self._failures.get(job, 0) + 1
                if failures > self._max_retries:
                    log.exception("turn %s failed %d times; giving up", job, failures)
                    self._failures.pop(job, None)
                else:
                    log.exception("turn %s failed (%d); retrying", job, failures)
                    delay = min(self._retry_cap_s, self._retry_delay_s * 2 ** (failures - 1))
                    self._retries.add(asyncio.create_task(self._retry(job, delay)))
                    continue  # task_done once the retry is queued, so join() waits
            finally:
                self._active -= 1
                if not self.running():
                    self._idle.call()
            self._queue.task_done()

    async def _retry(self, job: TurnJob, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            await self._queue.put(job)
        finally:
            self._queue.task_done()
            self._retries.discard(asyncio.current_task())  # type: ignore[arg-type]
