"""Turns handed straight to the worker's event loop (``celery.turn_dispatch = "loop"``).

With ``"thread"`` (Celery's own strategy) every turn in flight holds one blocked slot of
the threads pool and Celery's request bookkeeping for the whole chain it runs. With
``"loop"`` the ``caramba.turn`` task's strategy — what Celery's consumer calls for each
message it receives, on its own thread — hands the turn to the process's event loop at
once and keeps only the message; kombu's prefetch limit (``celery.concurrency`` with
``acks_late``) caps how many messages a worker holds, lowered while the loop is behind
(:mod:`tasks.intake`).

Every guarantee of the thread path is kept, in the same order:

- the message is acknowledged only once its turn (and the chain it runs) ended;
- a turn that raised is retried with the same back-off (the same message id, ``retries``
  one more, its ledger entry queued again, due then), and given up after
  ``limits.max_deliveries`` retries (its entry settled);
- a turn reaching a stopped runtime is rejected back to the queue; on a warm shutdown the
  runtime waits for the turns running, and whatever is still unacknowledged when the
  connection closes is put back on the queue by kombu;
- acknowledgements and publishes run on one ``caramba-acks`` thread, never on the loop
  (kombu's calls block), through the consumer's ``call_soon_ack`` (:mod:`tasks.consumer`:
  a message of a lost connection is left to the ledger); the turns that ended while that
  thread was busy go to it in one batch (:class:`Batch`), and those that ran to their end
  go to the consumer's loop in one hop (``TurnConsumer.call_soon_acks``), where kombu
  acknowledges each;
- a retry's countdown waits on Celery's timer, outside the prefetch count, as Celery's
  own strategy does.

A message read (its task id, retries, due time and job taken out) keeps only what settling
it needs, when its channel is kombu's Redis one (:func:`lighten`): that channel's QoS holds
every unacknowledged message until it is settled, and puts one back on the queue from the
copy it stored in Redis, by delivery tag — the message's own envelope, headers and decoded
body (about 6 KB) are never read again. With up to ``celery.concurrency`` turns in flight
that is ~6 MB of a worker's peak.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.scheduler.base import TurnJob, TurnOutcome
from tasks.intake import Intake
from tasks.runtime import WorkerRuntime, WorkerStopped
from tasks.scheduler import TURN_TASK

if TYPE_CHECKING:
    from celery import Celery, Task

log = logging.getLogger(__name__)


@dataclass(eq=False)  # (one per worker process: compared and hashed by identity)
class LoopDispatch:
    """The acknowledging thread of one worker process and the strategy's settings."""

    runtime: WorkerRuntime
    max_retries: int
    retry_delay_s: float
    retry_cap_s: float
    # The consumer's prefetch limit, steered by the turns' loop's lag (tasks.intake).
    intake: Intake

    def __post_init__(self) -> None:
        self._acks = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="caramba-acks")

    def drain(self) -> None:
        """Wait for the acknowledgements and retries still queued (the worker stops)."""
        self._acks.shutdown(wait=True)

    def strategy(self, task: Task, app: Celery, consumer: Any, **_: Any) -> Callable[..., None]:
        """Celery's task strategy for ``caramba.turn`` (see the module docstring)."""
        errors = consumer.connection_errors
        intake = self.intake
        intake.attach(consumer)

        def settle(message: Any, requeue: bool | None) -> None:
            intake.settled()
            # None: acknowledge; True/False: reject (back on the queue or not).
            if requeue is None:
                consumer.call_soon_ack(message.ack_log_error, log, errors)
            else:
                consumer.call_soon_ack(message.reject_log_error, log, errors, requeue=requeue)

        def settle_ended(ended: list[Ended]) -> None:
            # On the acknowledging thread: those that ran to their end acknowledged together.
            done: list[Ended] = []
            rest: list[Ended] = []
            for e in ended:
                (done if _succeeded(e.fut) else rest).append(e)
            if not hasattr(consumer, "call_soon_acks"):  # not tasks.consumer's: one by one
                done, rest = [], ended
            for e in rest:  # each on its own, as when each was a task of the thread
                try:
                    self._after(task, settle, e.message, e.job, e.task_id, e.retries, e.fut)
                except Exception:
                    log.exception("the end of turn message %s was not handled", e.task_id)
            if done:
                intake.settled(len(done))
                consumer.call_soon_acks([e.message for e in done], errors)
                for e in done:
                    log.info("Task %s[%s] succeeded", task.name, e.task_id)

        batch = Batch(self._acks, settle_ended)

        def ended(message: Any, job: dict[str, Any], task_id: str, retries: int, fut: Any) -> None:
            # On the loop thread: everything that blocks goes to the acknowledging thread,
            # in batches (one hop for the turns that ended meanwhile, not one each).
            batch.add(Ended(message, job, task_id, retries, fut))

        def start(message: Any, job: dict[str, Any], task_id: str, retries: int) -> None:
            try:
                turn = TurnJob.model_validate(job)
                self.runtime.submit_turn(
                    turn, task_id, lambda f: ended(message, job, task_id, retries, f)
                )
            except WorkerStopped:
                settle(message, True)
                return
            except Exception:
                log.exception("turn message %s is not a turn; giving up", task_id)
                self._acks.submit(self._give_up, settle, message, job, task_id)
                return

        def due_start(message: Any, job: dict[str, Any], task_id: str, retries: int) -> None:
            consumer.qos.decrement_eventually()
            start(message, job, task_id, retries)

        def handler(message: Any, body: Any, ack: Any, reject: Any, callbacks: Any) -> None:
            intake.took()
            headers = message.headers or {}
            task_id = str(headers.get("id", ""))
            retries = int(headers.get("retries") or 0)
            try:
                args, _kwargs, _embed = message.decode()
                job = args[0]
            except Exception:
                log.exception("turn message %s could not be read; dropped", task_id)
                settle(message, False)
                return
            lighten(message)
            # Celery's own words ("Task name[id] received", then succeeded, retry, failed or
            # rejected): operators and bench/chaos_victims.py read a worker's turns from them.
            log.info("Task %s[%s] received", task.name, task_id)
            eta = headers.get("eta")
            wait_s = _seconds_until(eta) if eta else 0.0
            if wait_s > 0:
                # Waits on Celery's timer (a monotonic clock), outside the prefetch count;
                # the qos and the timer are the consumer's current ones (built after the
                # strategies).
                consumer.qos.increment_eventually()
                consumer.timer.call_after(
                    wait_s, due_start, (message, job, task_id, retries), priority=6
                )
                return
            start(message, job, task_id, retries)

        return handler

    def _give_up(
        self,
        settle: Callable[[Any, bool | None], None],
        message: Any,
        job: dict[str, Any],
        task_id: str,
    ) -> None:
        self.runtime.settle(task_id, job)
        settle(message, None)
        log.error("Task %s[%s] failed: given up", TURN_TASK, task_id)

    def _after(
        self,
        task: Task,
        settle: Callable[[Any, bool | None], None],
        message: Any,
        job: dict[str, Any],
        task_id: str,
        retries: int,
        fut: asyncio.Future[TurnOutcome],
    ) -> None:
        """A turn's message once its chain ended, on the acknowledging thread."""
        exc = fut.exception() if not fut.cancelled() else WorkerStopped("cancelled")
        if exc is None:
            settle(message, None)
            log.info("Task %s[%s] succeeded", task.name, task_id)
            return
        if isinstance(exc, WorkerStopped):
            settle(message, True)
            log.info("Task %s[%s] rejected: the worker is stopping", task.name, task_id)
            return
        runtime = self.runtime
        if retries >= self.max_retries:
            log.error("turn %s failed %d times; giving up", job, retries + 1)
            self._give_up(settle, message, job, task_id)
            return
        delay = min(self.retry_cap_s, self.retry_delay_s * 2**retries)
        log.warning("turn %s raised %r; retrying in %.1f s", job, exc, delay)
        runtime.release(task_id, job, delay)
        try:
            task.apply_async(args=[job], task_id=task_id, retries=retries + 1, countdown=delay)
        except Exception:
            # Not published: the message goes back on the queue (the ledger has it too).
            log.exception("could not publish the retry of %s; putting it back", job)
            settle(message, True)
            log.info("Task %s[%s] rejected: its retry was not published", task.name, task_id)
            return
        settle(message, None)
        log.info("Task %s[%s] retry: in %.1f s", task.name, task_id, delay)


@dataclass(slots=True, eq=False)
class Ended:
    """A turn's message whose chain ended (``fut`` is done), to settle."""

    message: Any
    job: dict[str, Any]
    task_id: str
    retries: int
    fut: asyncio.Future[TurnOutcome]


class Batch:
    """The ended turns handed from the loop thread to the acknowledging thread: one task
    of its executor for those that ended in one round of the loop (or while that thread
    was busy), not one each (a submit and a thread wake-up per turn: ~5 % of a saturated
    worker's py-spy profile)."""

    def __init__(
        self, executor: concurrent.futures.Executor, run: Callable[[list[Ended]], None]
    ) -> None:
        self._executor = executor
        self._run = run
        self._lock = threading.Lock()
        self._items: list[Ended] = []

    def add(self, item: Ended) -> None:
        with self._lock:
            self._items.append(item)
            first = len(self._items) == 1
        if not first:  # a task for the batch is due already, and takes this one too
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop: now
            self._submit()
            return
        loop.call_soon(self._submit)  # once this round is over: its ended turns together

    def _submit(self) -> None:
        try:
            self._executor.submit(self._flush)
        except BaseException:  # the executor shut down (the worker stopped): said
            with self._lock:
                items, self._items = self._items, []
            log.exception("%d ended turns left unacknowledged (the broker keeps them)", len(items))

    def _flush(self) -> None:
        with self._lock:
            items, self._items = self._items, []
        self._run(items)


def _succeeded(fut: asyncio.Future[TurnOutcome]) -> bool:
    return not fut.cancelled() and fut.exception() is None


def lighten(message: Any) -> None:
    """Drop a read message's envelope, headers and body if its channel is kombu's Redis
    one with acknowledgement emulation (its QoS settles and restores messages by delivery
    tag, from the copy it stored in Redis): acknowledging or rejecting it reads only its
    channel, delivery tag, delivery info and state. Any other channel's message is left
    whole (kombu's in-memory QoS puts a rejected message back from the message itself)."""
    kombu_redis = sys.modules.get("kombu.transport.redis")  # not imported: not Redis
    if kombu_redis is None or not isinstance(
        getattr(message.channel, "qos", None), kombu_redis.QoS
    ):
        return
    message.body = None
    message._decoded_cache = None
    message.headers = {}
    message.properties = {}
    message.__dict__.pop("_raw", None)


def _seconds_until(eta: Any) -> float:
    """Seconds from now to ``eta`` (an ISO 8601 time, UTC if no zone); 0 if unreadable."""
    try:
        when = datetime.fromisoformat(str(eta))
    except ValueError:
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()
