"""The production scheduler: a turn is a ``caramba.turn`` task on the Celery broker.

Celery's publisher is synchronous (kombu over redis-py). Called on the event loop it
stalls every other turn of the process for each round trip to the broker (measured in
``bench/publish.py``: 2,000 publishes from 50 coroutines held the loop for 1.45 s), so
messages are published from a small dedicated thread pool — not asyncio's default
executor, which also serves DNS look-ups for the model's HTTP calls. Each publishing
thread takes its own producer (and connection) from Celery's pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from typing import TYPE_CHECKING

from core.config import Settings
from core.scheduler.base import TurnJob
from tasks.chain import CURRENT
from tasks.ledger import TurnLedger

if TYPE_CHECKING:
    from celery import Celery

# The one task of the app (registered under this explicit name by tasks.app.make_app).
TURN_TASK = "caramba.turn"


class CeleryScheduler:
    """:class:`core.scheduler.base.Scheduler` that publishes turns to a Celery queue.

    Every message is recorded in the :class:`~tasks.ledger.TurnLedger` before it is
    published, so a message the broker loses is published again.
    """

    def __init__(self, app: Celery, settings: Settings, *, publishers: int = 4) -> None:
        self.app = app
        self.queue = settings.celery.queue
        self.ledger = TurnLedger.for_settings(settings)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=publishers, thread_name_prefix="caramba-publish"
        )
        self.published = 0
        # Taken from the ledger by a sweep, not published yet (see republish_stale).
        self._claimed: list[TurnJob] = []

    def publish(self, job: TurnJob) -> str:
        """Publish synchronously (from a thread, never on an event loop); the task id."""
        task_id = str(uuid.uuid4())
        self.ledger.record(task_id, job)
        self.send_recorded(task_id, job)
        return task_id

    def send_recorded(self, task_id: str, job: TurnJob) -> None:
        """Publish a turn already recorded in the ledger under ``task_id``."""
        self.app.send_task(
            TURN_TASK,
            args=(job.model_dump(mode="json"),),
            task_id=task_id,
            queue=self.queue,
            ignore_result=True,
        )
        self.published += 1

    async def submit(self, job: TurnJob) -> None:
        loop = asyncio.get_running_loop()
        chain = CURRENT.get()
        if chain is not None and chain.accepts(job):
            # The agent's next turn: run by the current task (see tasks.chain), recorded
            # in the ledger so that it survives this worker.
            task_id = str(uuid.uuid4())
            await loop.run_in_executor(self._executor, self.ledger.record, task_id, job)
            chain.next = (task_id, job)
            return
        await loop.run_in_executor(self._executor, self.publish, job)

    async def settle(self, task_id: str, job: TurnJob) -> None:
        await asyncio.get_running_loop().run_in_executor(
            self._executor, self.ledger.settle, task_id, job
        )

    async def hand_over(self, task_id: str, job: TurnJob) -> None:
        """Give a chained turn to the broker after all (the chain stopped)."""
        await asyncio.get_running_loop().run_in_executor(
            self._executor, self.send_recorded, task_id, job
        )

    async def republish_stale(self, older_than_s: float) -> int:
        """Publish again the messages the ledger has held longer than ``older_than_s``.

        Taking them out of the ledger is the claim; one whose publish then fails (Redis
        restarting) is kept here and published by the next sweep."""
        loop = asyncio.get_running_loop()
        fresh = await loop.run_in_executor(self._executor, self.ledger.take_stale, older_than_s)
        jobs, self._claimed = [*self._claimed, *fresh], []
        for i, job in enumerate(jobs):
            try:
                await self.submit(job)
            except BaseException:
                self._claimed = jobs[i:]
                raise
        return len(jobs)

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.ledger.close()
