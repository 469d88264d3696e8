"""One long-lived asyncio event loop in a daemon thread, for synchronous callers.

Celery has no native asyncio; the measured best fit for I/O-bound turns is the threads
pool with one event loop per worker process: each turn's coroutine runs on this loop,
handed over by the consumer (``celery.turn_dispatch = "loop"``, :mod:`tasks.dispatch`) or
by a pool thread that blocks on the result (``"thread"``). Redis and HTTP clients then
live on one loop for the life of the process (a new HTTP client per task is very costly).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class LoopThread:
    """Runs an event loop forever in a daemon thread until :meth:`stop`."""

    def __init__(
        self,
        name: str = "caramba-loop",
        factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ) -> None:
        self._name = name
        self._factory = factory  # makes the loop (core.process.event_loop.loop_factory)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.native_id = 0  # the thread's id in the kernel (/proc/PID/task/ID), once started

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("LoopThread not started")
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("LoopThread already started")
        loop = self._factory()
        ready = threading.Event()

        def main() -> None:
            self.native_id = threading.get_native_id()
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=main, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from another thread).

        On timeout the coroutine is cancelled (at its next ``await``: cancellation is
        cooperative) and :class:`TimeoutError` is raised.
        """
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel what is still running on the loop, stop it and join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        if thread.is_alive():
            try:
                self.run(cancel_rest(), timeout)
            except Exception:
                log.warning("loop %s: tasks did not stop within %.1f s", self._name, timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
