"""The production scheduler: a turn is a ``caramba.turn`` task on the Celery broker.

Celery's publisher is synchronous (kombu over redis-py). Called on the event loop it
stalls every other turn of the process for each round trip to the broker (measured in
``bench/publish.py``: 2,000 publishes from 50 coroutines held the loop for 1.45 s), so
messages are published from a small dedicated thread pool — not asyncio's default
executor, which also serves DNS look-ups for the model's HTTP calls. Each publishing
thread takes its own producer (and connection) from Celery's pool.

Every turn given to the broker is an entry of the :class:`~tasks.ledger.TurnLedger`
first; what this process holds of it (turns running here) is in :attr:`holdings`, whose
leases the worker runtime renews. A worker's turns hold and settle their entries on its
event loop, in their own scripts (:meth:`CeleryScheduler.attach`): a chain (``tasks.chain``)
holds its first turn in that turn's start script, the others in their saves (the last
settled with the next renewal): no round trip of its own, no hop to a thread. Its other
turns start here while there is room (:mod:`tasks.local_turns`); the rest are published."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.config import Settings
from core.scheduler.base import TurnJob
from core.state.client import broker_settings, sync_client
from core.state.keys import Keys
from core.state.ledger import SyncClient, broker_queue_length
from core.state.ledger_moves import LedgerMoves, Ride, StartHold
from tasks.chain import CURRENT
from tasks.ledger import Holdings, TurnLedger

if TYPE_CHECKING:
    from celery import Celery

    from core.services import Services
    from tasks.local_turns import LocalTurns

log = logging.getLogger(__name__)

# The one task of the app (registered under this explicit name by tasks.app.make_app).
TURN_TASK = "caramba.turn"
# Stand-ins for the agent id and seq in a ride's spelling of an entry (``ride``).
_AGENT_MARK, _SEQ_MARK = "agent~mark", 987_654_321_987


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
        self.publishers = publishers
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=publishers, thread_name_prefix="caramba-publish"
        )
        # Renewals never wait behind publishes (a broker that is restarting holds a
        # publish for up to ~17 s): leases would lapse on a live worker.
        self._lease_executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="caramba-lease"
        )
        self._broker: SyncClient | None = None
        self._moves: LedgerMoves | None = None
        # Entries of turns that ended, settled with the next renewal (:meth:`settle_later`).
        self._unsettled: list[str] = []
        self._unsettled_lock = threading.Lock()
        self.published = 0
        self.local: LocalTurns | None = None  # set by a worker's runtime (tasks.local_turns)

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
        chain = CURRENT.get()
        if chain is not None and chain.held is not None:
            if chain.held == self.member(chain.task, job):
                chain.take(job)  # the next turn, held by the save that scheduled it
                return
        elif chain is not None and chain.accepts(job):
            # The next turn of the task (see tasks.chain), its save did not hold it: held
            # by this worker from now on, so that it survives this worker; the chain's
            # ended turns settled with it.
            await self.move(settle=chain.done, hold=[self.member(chain.task, job)])
            chain.done = []
            chain.take(job)
            return
        elif chain is not None and self.local and await self.local.start_here(chain, job):
            return
        await asyncio.get_running_loop().run_in_executor(self._executor, self.publish, job)

    def attach(self, svc: Services) -> None:
        """The worker's Services (its event-loop client): chains hold and settle their
        turns through it (one script, no thread hop) instead of the synchronous ledger."""
        self._moves = LedgerMoves.of(svc, self.settings.redis.key_prefix)

    @staticmethod
    def member(task_id: str, job: TurnJob | dict[str, object]) -> str:
        return TurnLedger.member(task_id, job)

    def ride(self, task_id: str, run_id: str, settle: Sequence[str]) -> Ride | None:
        """The ledger's move for a save of a turn of ``run_id`` on a chain (``tasks.chain``):
        settle ``settle``, hold its first follow-up under ``task_id``, spelled as
        :meth:`member` spells it. None without an event-loop client (:meth:`attach`)."""
        if self._moves is None:
            return None
        job = TurnJob.model_construct(run_id=run_id, agent_id=_AGENT_MARK, seq=_SEQ_MARK)
        marked = self.member(task_id, job)
        head, _, rest = marked.partition(_AGENT_MARK)
        mid, _, tail = rest.partition(str(_SEQ_MARK))
        if marked.count(_AGENT_MARK) != 1 or marked.count(str(_SEQ_MARK)) != 1 or not tail:
            return None
        keys = (self.ledger.key, self.ledger.held_key)
        return Ride(keys, round(self.lease_s * 1000), (head, mid, tail), tuple(settle))

    def rode(self, ride: Ride, held: str) -> None:
        """A save applied ``ride``: ``held`` is this process's now, the settled ones not."""
        self.holdings.add(held)
        for member in ride.settle:
            self.holdings.discard(member)

    def start_hold(self, task_id: str, job: TurnJob) -> StartHold | None:
        """Message ``task_id``'s turn, held by this process from now on and in the ledger by
        its start script (``tasks.chain``); None without a loop client or turn to start."""
        if self._moves is None or job.kind != "turn":
            return None
        member = self.member(task_id, job)
        self.holdings.add(member)
        keys = (self.ledger.key, self.ledger.held_key)
        where = (job.run_id, job.agent_id, job.seq)
        return StartHold(keys, round(self.lease_s * 1000), where, member)

    async def hold(self, task_id: str, job: TurnJob) -> None:
        """This worker runs message ``task_id``'s turn: its entry is held under this
        process's lease. Best effort: the turn needs Redis too, and says so if it is gone."""
        try:
            await self.move(hold=[self.member(task_id, job)])
        except Exception as exc:
            log.warning("could not hold %s in the ledger (%r)", job, exc)

    def settle_later(self, members: Sequence[str]) -> None:
        """These turns ran to their end: no longer renewed, their entries leave the ledger
        with the next renewal (:meth:`renew_sync`, within ``celery.lease_s / 3``: before
        their leases lapse), no round trip of their own. Settled late costs nothing: an
        entry left behind (this worker died, Redis was away) is published again once its
        lease lapsed and dropped as already applied."""
        for member in members:
            self.holdings.discard(member)
        with self._unsettled_lock:
            self._unsettled.extend(members)

    async def move(self, *, settle: Sequence[str] = (), hold: Sequence[str] = ()) -> None:
        if not settle and not hold:
            return
        for member in hold:
            self.holdings.add(member)
        try:
            if self._moves is None:  # not attached to a loop's client: the sync ledger
                await asyncio.get_running_loop().run_in_executor(
                    self._executor, self._move_sync, settle, hold
                )
            else:
                await self._moves.move(settle=settle, hold=hold, lease_s=self.lease_s)
        except BaseException:
            for member in hold:
                self.holdings.discard(member)
            raise
        for member in settle:
            self.holdings.discard(member)

    def _move_sync(self, settle: Sequence[str], hold: Sequence[str]) -> None:
        for member in settle:
            self.ledger.settle(member)
        if hold:
            self.ledger.hold(hold, self.lease_s)

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
        """Renew the lease of every entry this process holds, settling those that ended
        since the last renewal (one round trip); how many it holds."""
        members = self.holdings.snapshot()
        with self._unsettled_lock:
            ended, self._unsettled = self._unsettled, []
        held = set(members)  # (one held again meanwhile, by a copy of its message, stays)
        settle = [m for m in ended if m not in held]
        if members or settle:
            try:
                self.ledger.renew(members, self.lease_s, settle)
            except BaseException:
                with self._unsettled_lock:
                    self._unsettled[:0] = settle
                raise
        return len(members)

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
            # The one client factory: a separate broker behind Sentinel or TLS too.
            where = broker_settings(self.settings.redis, self.settings.celery.broker_url)
            self._broker = sync_client(where)
        lists = Keys(self.settings.redis.key_prefix).celery_queue_lists(self.queue)
        return broker_queue_length(self._broker, lists) == 0

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self._lease_executor.shutdown(wait=True)
        with self._unsettled_lock:
            ended, self._unsettled = self._unsettled, []
        try:
            if ended:
                self.ledger.renew([], self.lease_s, ended)
        except Exception as exc:
            log.warning("could not settle %d turns in the ledger (%r)", len(ended), exc)
        self.ledger.close()
        if self._broker is not None:
            self._broker.close()
