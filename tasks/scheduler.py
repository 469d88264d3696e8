"""The production scheduler: a turn is a ``caramba.turn`` task on the Celery broker.

Celery's publisher is synchronous (kombu over redis-py). Called on the event loop it
stalls every other turn of the process for each round trip to the broker (measured in
``bench/publish.py``: 2,000 publishes from 50 coroutines held the loop for 1.45 s), so
messages are published from a small dedicated thread pool — not asyncio's default
executor, which also serves DNS look-ups for the model's HTTP calls. Each publishing
thread takes its own producer (and connection) from Celery's pool.

Every turn given to the broker is an entry of the :class:`~tasks.ledger.TurnLedger`
first; what this process holds of it (turns running here) is in :attr:`holdings`, whose
leases the worker runtime renews.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from typing import TYPE_CHECKING

from core.config import Settings
from core.scheduler.base import TurnJob
from core.state.keys import Keys
from core.state.ledger import LedgerSets, SyncClient, broker_queue_length
from tasks.chain import CURRENT, Chain
from tasks.ledger import Holdings, TurnLedger

if TYPE_CHECKING:
    from celery import Celery

# The one task of the app (registered under this explicit name by tasks.app.make_app).
TURN_TASK = "caramba.turn"


def broker_key_prefix(settings: Settings) -> str:
    """kombu's ``global_keyprefix``: every broker key of a deployment is under it, so that
    deployments (and test runs) sharing one Redis database never see each other's tasks."""
    return Keys(settings.redis.key_prefix).celery_broker()


class CeleryScheduler:
    """:class:`core.scheduler.base.Scheduler` that publishes turns to a Celery queue."""

    def __init__(self, app: Celery, settings: Settings, *, publishers: int = 4) -> None:
        self.app = app
        self.settings = settings
        self.queue = settings.celery.queue
        self.lease_s = settings.celery.lease_s
        self.ledger = TurnLedger.for_settings(settings)
        self.holdings = Holdings()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=publishers, thread_name_prefix="caramba-publish"
        )
        # Renewals never wait behind publishes (a broker that is restarting holds a
        # publish for up to ~17 s): leases would lapse on a live worker.
        self._lease_executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="caramba-lease"
        )
        self._broker: SyncClient | None = None
        self.published = 0

    def publish(self, job: TurnJob) -> str:
        """Publish synchronously (from a thread, never on an event loop); the task id."""
        task_id = str(uuid.uuid4())
        self.ledger.record(TurnLedger.member(task_id, job))
        self.send_recorded(task_id, job)
        return task_id

    def send_recorded(self, task_id: str, job: TurnJob) -> None:
        """Publish a turn already in the ledger under ``task_id``."""
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
            # Handed back to the running task (see tasks.chain), in the ledger before this
            # returns: the agent's next turn held by this worker, the others queued.
            task_id = str(uuid.uuid4())
            if chain.takes_as_next(job):
                await loop.run_in_executor(self._executor, self.hold_sync, task_id, job)
                chain.next = (task_id, job)
            else:
                member = TurnLedger.member(task_id, job)
                await loop.run_in_executor(self._executor, self.ledger.record, member)
                chain.deferred.append((task_id, job))
            return
        await loop.run_in_executor(self._executor, self.publish, job)

    async def advance(
        self, chain: Chain, done: tuple[str, TurnJob] | None, *, go_on: bool = True
    ) -> tuple[str, TurnJob] | None:
        """After a turn of ``chain`` returned, in one trip to a publishing thread: the turn
        the task runs next (the agent's own, held already, or the first other one, held
        now), the other turns handed back published, then ``done`` (the chained turn that
        just ran, if any) settled. Not ``go_on`` (the chain ended early): the held turn
        goes back to the broker too. The next turn's ledger task id and job, or None."""
        held, chain.next = chain.next, None
        chosen = chain.pick() if held is None and go_on else None
        back = None if go_on else held
        rest, chain.deferred = chain.deferred, []
        if held is None and chosen is None and not rest and done is None:
            return None

        def run() -> None:
            if back is not None:
                self.release_sync(*back)
                rest.insert(0, back)
            for task_id, job in rest:
                self.send_recorded(task_id, job)
            if done is not None:
                self.settle_sync(*done)
            # Last: if anything before fails, the chosen turn stays queued in the ledger,
            # whose sweep publishes it again (held, it would be renewed and never run).
            if chosen is not None:
                self.hold_sync(*chosen)

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, run)
        except BaseException:
            if go_on and held is not None:
                chain.next = held  # for the task's clean-up to give back to the broker
            raise
        return (held or chosen) if go_on else None

    def hold_sync(self, task_id: str, job: TurnJob | dict[str, object]) -> None:
        """This worker runs the turn: its entry is held under this process's lease."""
        member = TurnLedger.member(task_id, job)
        self.holdings.add(member)
        self.ledger.hold([member], self.lease_s)

    def settle_sync(self, task_id: str, job: TurnJob | dict[str, object]) -> None:
        """The turn ran to its end: its entry leaves the ledger."""
        member = TurnLedger.member(task_id, job)
        self.holdings.discard(member)
        self.ledger.settle(member)

    def release_sync(
        self, task_id: str, job: TurnJob | dict[str, object], delay_s: float = 0.0
    ) -> None:
        """This worker gives the turn back to the broker (a retry after ``delay_s``, a
        chain that stopped): queued again, due after the delay."""
        member = TurnLedger.member(task_id, job)
        self.holdings.discard(member)
        self.ledger.release([member], delay_s)

    def renew_sync(self) -> int:
        """Renew the lease of every entry this process holds (one round trip)."""
        members = self.holdings.snapshot()
        if members:
            self.ledger.renew(members, self.lease_s)
        return len(members)

    async def settle(self, task_id: str, job: TurnJob) -> None:
        await asyncio.get_running_loop().run_in_executor(
            self._executor, self.settle_sync, task_id, job
        )

    async def hand_over(self, task_id: str, job: TurnJob) -> None:
        """Give a chained turn to the broker after all (the chain stopped)."""

        def release_and_send() -> None:
            self.release_sync(task_id, job)
            self.send_recorded(task_id, job)

        await asyncio.get_running_loop().run_in_executor(self._executor, release_and_send)

    async def renew(self) -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._lease_executor, self.renew_sync)

    async def republish_stale(self) -> int:
        """Publish again what the ledger finds lost (see :mod:`tasks.ledger`); how many."""
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self.republish_stale_sync
        )

    def republish_stale_sync(self) -> int:
        limits = self.settings.celery
        deadline, members = self.ledger.claim_stale(
            grace_s=2 * limits.lease_s,
            visibility_s=limits.visibility_timeout_s,
            queue_empty=self.broker_queue_empty(),
            lease_s=limits.lease_s,
        )
        sent = []
        try:
            for member in members:
                self.send_recorded(*TurnLedger.parse(member))
                sent.append(member)
        finally:
            # Held under the claim until published; one not published stays held and
            # is claimed again when the claim's lease lapses.
            if sent:
                self.ledger.release(sent, deadline=deadline)
        return len(sent)

    def broker_queue_empty(self) -> bool:
        """No message of the turn queue waits in the broker (LLEN of its Redis lists)."""
        if self._broker is None:
            url = self.settings.celery.broker_url or self.settings.redis.url
            self._broker = LedgerSets.client(url)
        lists = Keys(self.settings.redis.key_prefix).celery_queue_lists(self.queue)
        return broker_queue_length(self._broker, lists) == 0

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self._lease_executor.shutdown(wait=True)
        self.ledger.close()
        if self._broker is not None:
            self._broker.close()
