"""Turns a worker starts itself: the other turns a chained turn schedules in its run.

A chain (:mod:`tasks.chain`) runs next the first turn a turn schedules in its run; the
others — a lead's members beyond the first, the results that wake several parents — were
published: a broker round trip, Celery's consumer receiving the message, its
acknowledgement, about 1.5–3 ms of the worker's CPU a message beside the turn's own, only
to land in a worker that is as good as this one (issue 25). While this worker has room
(fewer than ``celery.local_turns`` of them running here, and fewer turns in flight than
``celery.concurrency``), such a turn starts here instead, as a chain of its own.

Nothing is lost if the worker dies: the turn is an entry of the turn ledger held by this
worker from before the turn that schedules it returns (one script on the loop's client,
the chain's ended turns settled in it), renewed with the rest of what the worker runs —
what a chained turn has. If the worker dies its lease lapses and another worker publishes
it again. A local turn that raises, or outlives ``celery.turn_timeout_s``, goes to the
broker (queued again in the ledger, then published), where the usual retries and
``limits.max_deliveries`` take it. A stopping worker starts none: they are published.

Owns the local turns' count and their tasks; called by the scheduler (on the loop) and
started by the worker runtime (:mod:`tasks.runtime`), whose in-flight count they join."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from core.process import jobs
from core.scheduler.base import TurnJob, TurnOutcome
from tasks.chain import Chain, run_chain, timed

if TYPE_CHECKING:
    from core.services import Services
    from tasks.scheduler import CeleryScheduler

log = logging.getLogger(__name__)


@dataclass
class LocalTurns:
    """The turns this worker started itself (see the module docstring).

    ``begin`` counts one more turn in flight in the worker (False: no free slot, or the
    runtime stops); ``end`` counts it ended; ``handle`` runs a job; ``limit_s`` is the turn
    time-out."""

    scheduler: CeleryScheduler
    handle: Callable[[TurnJob], Awaitable[TurnOutcome]]
    begin: Callable[[], bool]
    end: Callable[[], None]
    limit: int
    limit_s: float
    running: int = 0
    started: int = 0
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        scheduler: CeleryScheduler,
        svc: Services,
        begin: Callable[[], bool],
        end: Callable[[], None],
    ) -> LocalTurns:
        """A worker runtime's, for the turns of ``svc`` (``celery.local_turns``)."""
        limits = svc.settings.celery
        handle = partial(jobs.handle, svc)
        return cls(scheduler, handle, begin, end, limits.local_turns, limits.turn_timeout_s)

    def has_room(self, job: TurnJob) -> bool:
        """Whether ``job`` may start here (a turn, under the limit)."""
        return job.kind == "turn" and self.running < self.limit

    async def start_here(self, chain: Chain, job: TurnJob) -> bool:
        """Start ``job``, another turn ``chain``'s turn schedules, here if there is room:
        held by this worker in the ledger first, the chain's ended turns settled in the
        same script. False: no room (the caller publishes it)."""
        if not self.has_room(job):
            return False
        task_id = str(uuid.uuid4())
        await self.scheduler.move(settle=chain.done, hold=[self.scheduler.member(task_id, job)])
        chain.done = []
        if not self._start(task_id, job):  # no free slot after all, or the worker stops
            await self.scheduler.hand_over(task_id, job)
        return True

    def _start(self, task_id: str, job: TurnJob) -> bool:
        """Start ``job``, already held in the ledger under ``task_id`` by this worker, on
        the running loop; False when the worker has no free slot (the caller publishes)."""
        if not self.has_room(job) or not self.begin():
            return False
        self.running += 1
        self.started += 1
        task = asyncio.get_running_loop().create_task(
            self._run(task_id, job), name=f"caramba-local-{job.agent_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(self, task_id: str, job: TurnJob) -> None:
        try:
            chain = run_chain(self.scheduler, self.handle, job, task_id, already_held=True)
            await timed(chain, self.limit_s)
        except BaseException as exc:
            # Its entry is still held (run_chain leaves a turn that raised to its task):
            # the broker takes it, with the usual retries.
            log.warning("local turn %s failed (%r); handing it to the broker", job, exc)
            try:
                await self.scheduler.hand_over(task_id, job)
            except Exception as lost:  # its lease lapses: the ledger's sweep publishes it
                log.warning("could not hand %s to the broker (%r)", job, lost)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.running -= 1
            self.end()


__all__ = ["LocalTurns"]
