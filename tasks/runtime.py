"""Per worker process: one event loop, one set of Services, the background loop.

Built once when the Celery worker starts (a worker bootstep) and shared by the whole
process: each turn runs ``core.process.jobs.handle`` (a turn, or a request's planning) on
the process's loop, handed there by the ``loop`` dispatch (:mod:`tasks.dispatch`,
:meth:`WorkerRuntime.submit_turn`) or by a pool thread that waits for it (``thread``,
:meth:`WorkerRuntime.run_turn`). The background loop
(``core.process.background``: due timers, pending intents, ended runs) runs on the same
loop for as long as the worker lives, as every turn-running process must, and so do the
two loops of the turn ledger (``tasks.ledger``): one renews the lease of every turn this
process runs (one round trip every ``celery.lease_s / 3``), the other publishes again the
turns of dead workers and the messages the broker lost. Each is kept alive by
:mod:`tasks.forever`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from core.config import Settings
from core.process.background import run_background
from core.process.event_loop import loop_factory, loop_name
from core.process.jobs import handle
from core.process.tools_start import start_tools, stop_tools
from core.process.wiring import build_services
from core.scheduler.base import IdleWatchers, Scheduler, TurnJob, TurnOutcome
from core.services import Services
from tasks.broker import open_publishing
from tasks.chain import run_chain, timed
from tasks.forever import every, forever, wait
from tasks.ledger import sweep_interval_s
from tasks.local_turns import LocalTurns
from tasks.loop import LoopThread
from tasks.scheduler import CeleryScheduler

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)

# How a worker process builds its Services; called once, on the worker's event loop, with
# the Celery scheduler the turns must use to schedule their successors.
ServicesFactory = Callable[[Settings, Scheduler], Services]


class WorkerStopped(RuntimeError):
    """A turn arrived while the runtime is not running (starting up or shutting down)."""


class WorkerRuntime:
    """The turn-running machinery of one worker process. Thread-safe; start/stop idempotent."""

    def __init__(
        self, app: Celery, settings: Settings, services_factory: ServicesFactory | None = None
    ) -> None:
        self.app = app
        self.settings = settings
        # Default: real Redis from ``redis.url`` and the configured litellm gateway.
        self._factory: ServicesFactory = services_factory or build_services
        self._lock = threading.Condition()
        self._loop: LoopThread | None = None
        self._svc: Services | None = None
        self._scheduler: CeleryScheduler | None = None
        self._stop_background: asyncio.Event | None = None
        self._background: list[asyncio.Task[None]] = []
        self._inflight = 0
        self.turns_run = 0
        # Called on the loop when the last running turn ended (watch_idle).
        self._idle = IdleWatchers()

    def start(self) -> None:
        with self._lock:
            if self._loop is not None:
                return
            loop = LoopThread("caramba-turns", loop_factory(self.settings.scheduler.event_loop))
            loop.start()
            try:
                self._svc = loop.run(self._open(), timeout=60)
            except BaseException:
                loop.stop()
                raise
            self._loop = loop
        # The loop thread's kernel id: where a profiler or bench/peers.py finds the turns'
        # CPU apart from Celery's own (the main thread) and the pool's threads.
        queue, kind = self.settings.celery.queue, loop_name(loop.loop)
        log.info("turn runtime started (queue %s, loop thread %d, %s)", queue, loop.native_id, kind)

    async def _open(self) -> Services:
        scheduler = CeleryScheduler(self.app, self.settings)
        try:
            svc = self._factory(self.settings, scheduler)
            await svc.store.ping()  # fail at start-up, not on the first turn
            # MCP servers' sessions, on this loop (the turns' loop), for the process's life.
            await start_tools(svc)
            # The bus's and the roles' templates compiled here, not in the first turns.
            svc.prompts.warm(svc.settings.prompts.roles.values())
        except BaseException:
            await scheduler.aclose()
            raise
        scheduler.attach(svc)
        scheduler.local = LocalTurns.of(scheduler, svc, self._begin_local, self._ended)
        self._scheduler = scheduler
        try:  # best effort: the first publish connects anyway
            warm = partial(open_publishing, self.app, scheduler.queue, scheduler.publishers)
            await asyncio.get_running_loop().run_in_executor(None, warm)
        except Exception as exc:
            log.warning("could not open a publishing connection yet (%r)", exc)
        self._stop_background = stop = asyncio.Event()
        self._background = [
            asyncio.create_task(
                forever("background loop", lambda: run_background(svc, stop, self), stop),
                name="caramba-background",
            ),
            asyncio.create_task(
                forever("ledger leases", lambda: self._renew(scheduler, stop), stop),
                name="caramba-ledger-leases",
            ),
            asyncio.create_task(
                forever("ledger sweep", lambda: self._sweep(scheduler, stop), stop),
                name="caramba-ledger-sweep",
            ),
        ]
        return svc

    async def _renew(self, scheduler: CeleryScheduler, stop: asyncio.Event) -> None:
        """Keep the lease of every turn this process runs (see :mod:`tasks.ledger`)."""
        await every(stop, sweep_interval_s(self.settings), "ledger leases", scheduler.renew)

    async def _sweep(self, scheduler: CeleryScheduler, stop: asyncio.Event) -> None:
        """Publish again the turns of dead workers and those the broker lost."""

        async def sweep() -> None:
            if n := await scheduler.republish_stale():
                log.warning("published %d turns again that no live worker held", n)

        # Offset from the renewals; a lapse is seen within lease_s + this interval.
        await wait(stop, sweep_interval_s(self.settings) / 2)
        await every(stop, sweep_interval_s(self.settings), "ledger sweep", sweep)

    def run_turn(self, job: TurnJob, task_id: str | None = None) -> TurnOutcome:
        """Run one turn to its end, then the turns it chains (``tasks.chain``); abandoned
        (cancelled) after ``celery.turn_timeout_s``.

        The ledger entry of message ``task_id`` is held by this process meanwhile, and
        settled when its turn ran (if it raised, the caller moves it: :meth:`settle` or
        :meth:`release`)."""
        with self._lock:
            if self._loop is None or self._svc is None:
                raise WorkerStopped("the worker runtime is not running")
            loop, svc, scheduler = self._loop, self._svc, self._scheduler
            self._inflight += 1
        try:
            if task_id is None or scheduler is None:
                work = handle(svc, job)
            else:
                work = run_chain(scheduler, partial(handle, svc), job, task_id)
            return loop.run(work, timeout=self.settings.celery.turn_timeout_s)
        finally:
            self._ended()

    def submit_turn(
        self,
        job: TurnJob,
        task_id: str,
        then: Callable[[asyncio.Future[TurnOutcome]], object],
    ) -> None:
        """Start :meth:`run_turn`'s work on the loop without waiting for it (the ``loop``
        dispatch, :mod:`tasks.dispatch`); ``then`` is its task's done callback (on the loop,
        no concurrent future chained to it). The turn counts as running until ``then``
        returned, so a stopping runtime waits for both."""
        with self._lock:
            if self._loop is None or self._svc is None or self._scheduler is None:
                raise WorkerStopped("the worker runtime is not running")
            loop, svc, scheduler = self._loop, self._svc, self._scheduler
            self._inflight += 1
        chain = run_chain(scheduler, partial(handle, svc), job, task_id)
        work = timed(chain, self.settings.celery.turn_timeout_s)

        def done(task: asyncio.Future[TurnOutcome]) -> None:
            try:
                then(task)
            except Exception:
                log.exception("the end of turn %s was not handled", job)
            finally:
                self._ended()

        def begin() -> None:
            asyncio.ensure_future(work).add_done_callback(done)

        try:
            loop.loop.call_soon_threadsafe(begin)
        except BaseException:  # the loop closed: never started, no longer running
            work.close()
            chain.close()
            self._ended()
            raise

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` on the turns' loop until it ends or the runtime stops."""
        if self._loop is not None:
            self._loop.submit(work)

    def _begin_local(self) -> bool:
        """One more turn in flight (:mod:`tasks.local_turns`), if running with a free slot."""
        with self._lock:
            room = self._loop is not None and self._inflight < self.settings.celery.concurrency
            self._inflight += room
            return room

    def _ended(self) -> None:
        with self._lock:
            self._inflight -= 1
            self.turns_run += 1
            self._lock.notify_all()
            idle, loop = self._inflight == 0, self._loop
        if idle and loop is not None:
            try:
                self._idle.call(loop.loop.call_soon_threadsafe)
            except RuntimeError:  # the loop closed meanwhile (stopping)
                return

    @property
    def scheduler(self) -> CeleryScheduler | None:  # None when not running
        return self._scheduler

    def running(self) -> bool:
        """Whether a turn runs in this process (the background loop holds back the work
        that can wait meanwhile: ``core.process.background.Deferral``)."""
        return self._inflight > 0

    def watch_idle(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on the turns' loop each time the last running turn ended."""
        return self._idle.watch(callback)

    def settle(self, task_id: str, job: dict[str, object]) -> None:
        """The message ``task_id`` ran to its end: forget it in the ledger.

        Best effort: the turn is done whatever happens here. An entry left behind (Redis
        unavailable, the worker stopping) is no longer renewed: once its lease lapsed it is
        published again and dropped as already applied."""
        scheduler = self._scheduler
        if scheduler is None:
            return
        try:
            scheduler.settle_sync(task_id, job)
        except Exception as exc:
            log.warning("could not settle %s in the ledger (%r); it will run again", job, exc)

    def release(self, task_id: str, job: dict[str, object], delay_s: float) -> None:
        """The message ``task_id`` is retried in ``delay_s``: its entry is queued again,
        due then (best effort, as :meth:`settle`)."""
        scheduler = self._scheduler
        if scheduler is None:
            return
        try:
            scheduler.release_sync(task_id, job, delay_s)
        except Exception as exc:
            log.warning("could not queue %s again in the ledger (%r)", job, exc)

    def stop(self, grace_s: float | None = None) -> None:
        """Wait for running turns (up to ``grace_s``, default the turn timeout), then stop
        the background loop, close the services and the event loop."""
        grace = self.settings.celery.turn_timeout_s + 5 if grace_s is None else grace_s
        deadline = time.monotonic() + grace
        with self._lock:
            if self._loop is None:
                return
            loop, self._loop = self._loop, None  # no new turns from here on
            while self._inflight and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            if self._inflight:
                log.warning("stopping with %d turns still running", self._inflight)
        try:
            loop.run(self._close(), timeout=10)
        except Exception:
            log.exception("closing the worker services failed")
        finally:
            loop.stop()
            self._svc = None
        log.info("turn runtime stopped after %d turns", self.turns_run)

    async def _close(self) -> None:
        if self._stop_background is not None:
            self._stop_background.set()
        if self._background:
            await asyncio.wait(self._background, timeout=5)
        if self._svc is not None:
            await stop_tools(self._svc)
            await self._svc.aclose()
        if self._scheduler is not None:
            await self._scheduler.aclose()
            self._scheduler = None
