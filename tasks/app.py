"""The Celery app: one task, ``caramba.turn``, that runs one agent turn.

An app is built per :class:`~core.config.Settings` (Celery ignores a ``broker_url``
changed after first use, so settings are baked in at construction). Delivery is
at-least-once on purpose: the task is acknowledged only after the turn returns
(``acks_late``), and the turn is idempotent by sequence number, so a second delivery is
dropped, never applied twice.

What brings back the turns of a worker that died is the turn ledger (:mod:`tasks.ledger`):
the worker holds the turns it runs under a lease of ``celery.lease_s`` and the other
workers publish them again once it lapsed — seconds, not the broker's visibility timeout.
The broker's own redelivery of unacknowledged messages is only a late backstop (see
:func:`transport_options`).

A worker outlives its broker's restarts: it reconnects for as long as it takes, and its
consumer (:mod:`tasks.consumer`) survives closing the lost connection.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, Task, bootsteps
from celery.exceptions import Reject

from core.config import Settings
from core.scheduler.base import TurnJob
from core.state.client import broker as redis_broker
from tasks.broker import BrokerAMQP
from tasks.consumer import TurnConsumer
from tasks.dispatch import LoopDispatch
from tasks.intake import Intake
from tasks.production import require_redis
from tasks.runtime import ServicesFactory, WorkerRuntime, WorkerStopped
from tasks.scheduler import TURN_TASK, broker_key_prefix

log = logging.getLogger(__name__)

# Longest back-off between two tries of a turn whose task raised. Tries are bounded:
# ``limits.max_deliveries`` retries, and core quarantines the turn before that.
_RETRY_CAP_S = 30.0
_RUNTIME_KEY = "caramba_runtime"
_WORKER_KEY = "caramba_worker"
# Publishing (a turn's successor, a retry) waits this long for a broker that is restarting
# before the publish fails: 0.5 + 1 + 1.5 + 7 × 2 ≈ 17 s over 10 tries.
PUBLISH_RETRY_POLICY = {
    "max_retries": 10,
    "interval_start": 0.5,
    "interval_step": 0.5,
    "interval_max": 2.0,
}


def runtime_of(app: Celery) -> WorkerRuntime:
    """The turn runtime of ``app``'s worker in this process (started with the worker)."""
    runtime: WorkerRuntime = app.conf[_RUNTIME_KEY]
    return runtime


def worker_of(app: Celery) -> Any:
    """The Celery ``WorkController`` that ran ``app`` in this process, if one was built
    (its ``exitcode`` is the worker's: ``Celery.start`` returns None whatever it is)."""
    return app.conf.get(_WORKER_KEY)


def broker_url(settings: Settings) -> str:
    """``celery.broker_url``, else the Redis of ``redis.url`` as kombu names it (behind
    Sentinel ``sentinel://host:port;…``, its ``master_name`` in the transport options)."""
    return settings.celery.broker_url or redis_broker(settings.redis).url


def broker_security(settings: Settings) -> dict[str, Any]:
    """The broker's TLS and ACL user when it is the Redis of ``redis.url`` (Celery's
    ``broker_use_ssl``, ``broker_user``, ``broker_password``; the password from the
    environment only, ``CARAMBA_REDIS_PASSWORD``)."""
    if settings.celery.broker_url or settings.redis.embedded:
        return {}
    found = redis_broker(settings.redis)
    options: dict[str, Any] = {}
    if found.use_ssl is not None:
        options["broker_use_ssl"] = found.use_ssl
    if found.user:
        options["broker_user"] = found.user
    if found.password:
        options["broker_password"] = found.password
    return options


def transport_options(settings: Settings) -> dict[str, Any]:
    """kombu's Redis transport options, chosen for a broker that is only a backstop.

    - ``visibility_timeout`` stays long (``celery.visibility_timeout_s``, an hour): kombu
      delivers a message again when it was not acknowledged within it, and a running turn
      (up to ``celery.turn_timeout_s``, 15 minutes, a chain of turns included) must never
      be delivered again while its worker is alive. The ledger's leases bring back a dead
      worker's turns within seconds; kombu's copy an hour later is dropped by the turn.
    - ``unacked_mutex_expire`` is short (``celery.lease_s``, at most 10 s): kombu restores
      unacknowledged messages under a lock, and a worker killed while holding it would
      block every restore for its lifetime (300 s by default).
    - ``unacked_restore_interval`` (with ``unacked_restore_throttle`` 1): how often each
      worker looks for messages to restore — a quarter of the visibility timeout, 1–60 s
      (kombu's default is every 100 s).
    - ``global_keyprefix``: every broker key of a deployment under its own prefix.
    """
    visibility = settings.celery.visibility_timeout_s
    return {
        "visibility_timeout": visibility,
        "unacked_mutex_expire": max(1, int(min(10.0, settings.celery.lease_s))),
        "unacked_restore_interval": int(max(1.0, min(60.0, visibility / 4))),
        "unacked_restore_throttle": 1,
        "global_keyprefix": broker_key_prefix(settings),
        # Behind Sentinel: master_name and how the Sentinels are spoken to.
        **({} if settings.celery.broker_url else redis_broker(settings.redis).transport_options),
    }


def make_app(
    settings: Settings,
    *,
    services_factory: ServicesFactory | None = None,
    retry_delay_s: float = 1.0,
    name: str = "caramba",
) -> Celery:
    """A Celery app for ``settings``: the turn task and the per-process worker runtime.

    ``services_factory`` replaces how a worker process builds its Services (tests use it
    to run an in-process worker with a scripted model). ``retry_delay_s`` is the first
    back-off after a turn raised; it doubles per retry up to 30 s.
    """
    require_redis(settings)
    # Every broker connection of the app on tasks.broker's: one Redis client per channel.
    app = Celery(name, set_as_current=False, amqp=BrokerAMQP)
    _configure(app, settings)
    runtime = WorkerRuntime(app, settings, services_factory)
    app.conf[_RUNTIME_KEY] = runtime
    dispatch = None
    if settings.celery.turn_dispatch == "loop":
        limit = settings.limits.max_deliveries
        intake = Intake.of(settings.celery)
        dispatch = LoopDispatch(runtime, limit, retry_delay_s, _RETRY_CAP_S, intake)
    _add_runtime_step(app, runtime, dispatch)
    _register_turn(app, runtime, settings.limits.max_deliveries, retry_delay_s, dispatch)
    return app


def _configure(app: Celery, settings: Settings) -> None:
    queue = settings.celery.queue
    app.conf.update(
        broker_url=broker_url(settings),
        broker_transport_options=transport_options(settings),
        **broker_security(settings),
        # A lost broker connection (Redis restarting) is retried for as long as it takes:
        # Celery's default gives up after 100 tries (about 47 minutes) and the worker exits.
        broker_connection_retry=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        task_publish_retry_policy=PUBLISH_RETRY_POLICY,
        worker_consumer=TurnConsumer,
        # Turns running when the connection is lost are not cancelled: the threads pool
        # cannot stop a running thread, and a turn that finishes is saved all the same and
        # acknowledged on the new connection (tasks.consumer).
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        result_backend=None,
        task_default_queue=queue,
        task_routes={TURN_TASK: {"queue": queue}},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_enable_remote_control=settings.celery.remote_control,  # docs/redis-acl.md
        enable_utc=True,
    )


def _add_runtime_step(app: Celery, runtime: WorkerRuntime, dispatch: LoopDispatch | None) -> None:
    class RuntimeStep(bootsteps.StartStopStep):
        """This process's turn runtime, started with the worker after its pool.

        Steps stop in reverse order, so this one stops before the pool: the consumer has
        stopped taking tasks by then, and ``runtime.stop`` waits for the turns still
        running (up to ``celery.turn_timeout_s``); a task reaching a stopped runtime is
        put back on the queue. A cold shutdown (``shutdown``) does not wait.
        """

        requires = ("celery.worker.components:Pool",)

        def __init__(self, parent: Any, **kwargs: Any) -> None:
            super().__init__(parent, **kwargs)
            app.conf[_WORKER_KEY] = parent  # for the worker's exit code (tasks.worker)

        def start(self, parent: Any) -> None:
            runtime.start()
            if dispatch is not None:
                runtime.spawn(dispatch.intake.run())

        def stop(self, parent: Any) -> None:
            runtime.stop()
            if dispatch is not None:
                dispatch.drain()  # the ended turns' acknowledgements and retries

        def shutdown(self, parent: Any) -> None:
            runtime.stop(grace_s=1.0)
            if dispatch is not None:
                dispatch.drain()

    app.steps["worker"].add(RuntimeStep)


def _register_turn(
    app: Celery,
    runtime: WorkerRuntime,
    max_retries: int,
    retry_delay_s: float,
    dispatch: LoopDispatch | None,
) -> None:
    # shared=False: a shared task would be registered in every app of the process, and a
    # second app (other settings, a test) would run the first app's runtime.
    # The "loop" dispatch: Celery's consumer hands each message to tasks.dispatch instead
    # of a pool thread; the task body below then runs only when called directly.
    strategy: dict[str, Any] = {} if dispatch is None else {"Strategy": dispatch.strategy}

    @app.task(
        name=TURN_TASK, bind=True, acks_late=True, ignore_result=True, shared=False, **strategy
    )
    def turn(self: Task, job: dict[str, Any]) -> str:
        """Run one agent turn on this process's event loop; returns the outcome's name."""
        task_id = self.request.id
        try:
            outcome = runtime.run_turn(TurnJob.model_validate(job), task_id).value
        except WorkerStopped:
            # Shutting down: put the message back for another worker instead of failing it.
            raise Reject("worker is stopping", requeue=True) from None
        except Exception as exc:
            retries = self.request.retries
            if retries >= max_retries:
                log.error("turn %s failed %d times; giving up", job, retries + 1)
                runtime.settle(task_id, job)
                raise
            delay = min(_RETRY_CAP_S, retry_delay_s * 2**retries)
            log.warning("turn %s raised %r; retrying in %.1f s", job, exc, delay)
            # The retry is the same message (same task id): its ledger entry is queued
            # again, due when the retry is.
            runtime.release(task_id, job, delay)
            raise self.retry(exc=exc, countdown=delay, max_retries=max_retries) from exc
        return outcome  # its ledger entry was settled with the turn (tasks.chain)
