"""Services driven by either scheduler, so one scenario test covers both.

``inline``: turns run as asyncio tasks in the test's own loop (embedded mode).
``celery``: turns are real Celery tasks on the real Redis broker, run by a real worker
(threads pool) started in this process; the worker builds its own Services on its own
event loop, sharing only the model object with the test (so the test can inspect the
requests it received).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.worker import state as worker_state

from core.config import Settings
from core.llm.base import LLM
from core.process.jobs import handle
from core.process.wiring import build_services
from core.scheduler.base import Scheduler
from core.scheduler.inline import InlineScheduler
from core.services import Services
from tasks.app import make_app, runtime_of
from tasks.scheduler import CeleryScheduler
from tests.conftest import REDIS_URL

SchedulerKind = Literal["inline", "celery"]

# The same scenarios with turns run inline (fakeredis, real Redis) and as Celery tasks on
# a real worker: both schedulers must give the same outcome.
SCHEDULERS = pytest.mark.parametrize(
    ("any_redis", "kind"),
    [
        pytest.param("fakeredis", "inline", id="inline-fakeredis"),
        pytest.param("redis", "inline", id="inline-redis", marks=pytest.mark.integration),
        pytest.param("redis", "celery", id="celery-redis", marks=pytest.mark.integration),
    ],
    indirect=["any_redis"],
)


def celery_settings(settings: Settings, prefix: str, **celery: Any) -> Settings:
    """``settings`` pointed at the test Redis under ``prefix`` (broker keys included).

    A turn is abandoned after 20 s (not 15 min), so a stuck turn fails the test instead of
    holding the worker's shutdown.
    """
    return settings.model_copy(
        update={
            "redis": settings.redis.model_copy(update={"url": REDIS_URL, "key_prefix": prefix}),
            "celery": settings.celery.model_copy(update={"turn_timeout_s": 20.0, **celery}),
        }
    )


def worker_app(settings: Settings, llm: LLM) -> Celery:
    """The production app, except that its worker's Services use ``llm``; retries back off
    from 50 ms and the worker stops within 0.1 s (its blocking pop) instead of 1 s."""

    def worker_services(s: Settings, scheduler: Scheduler) -> Services:
        return build_services(s, scheduler, llm=llm)

    app = make_app(settings, services_factory=worker_services, retry_delay_s=0.05)
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "polling_interval": 0.1,
    }
    return app


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Celery's worker set-up sets the root logger's level; give pytest its own back."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


@contextlib.asynccontextmanager
async def celery_worker(app: Celery, concurrency: int = 8) -> AsyncIterator[Any]:
    """A real Celery worker (threads pool) for ``app`` in a thread of this process.

    Started and stopped off the event loop: both block (start until the consumer is
    ready, stop until running turns finish). The turn runtime is started first, here:
    if it cannot start, the worker would log an "unrecoverable error" and
    ``start_worker`` would wait for it forever; this way the test fails with the cause.
    """
    runtime = runtime_of(app)
    await asyncio.to_thread(runtime.start)
    with _quiet_root_logger():
        cm = start_worker(
            app,
            pool="threads",
            concurrency=concurrency,
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30,
        )
        try:
            worker = await asyncio.to_thread(cm.__enter__)
            try:
                yield worker
            finally:
                await asyncio.to_thread(cm.__exit__, None, None, None)
        finally:
            runtime.stop(grace_s=0)  # a no-op after a clean worker shutdown
            # A worker thread that outlived its join leaves this global set, which would
            # stop the next embedded worker before it is ready.
            worker_state.should_terminate = None


@contextlib.asynccontextmanager
async def scheduled_services(
    settings: Settings,
    llm: LLM,
    kind: SchedulerKind,
    redis: Any,
    *,
    concurrency: int = 8,
) -> AsyncIterator[Services]:
    """Services whose turns are run by the ``kind`` scheduler until the block ends.

    ``redis`` is the test's client: a fakeredis (inline only) or the real one from the
    ``real_redis``/``any_redis`` fixtures, whose ``test_prefix`` becomes the key prefix.
    """
    prefix = getattr(redis, "test_prefix", None)
    if prefix is not None:
        settings = settings.model_copy(
            update={"redis": settings.redis.model_copy(update={"key_prefix": prefix})}
        )
    if kind == "inline":
        inline = InlineScheduler(settings.scheduler.inline_concurrency)
        svc = build_services(settings, inline, llm=llm, redis=redis)
        inline.start(lambda job: handle(svc, job))
        try:
            yield svc
        finally:
            await inline.stop()
        return
    if prefix is None:
        raise ValueError("the celery scheduler needs the real Redis (real_redis / any_redis)")
    settings = celery_settings(settings, prefix)
    app = worker_app(settings, llm)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=llm, redis=redis)
    try:
        async with celery_worker(app, concurrency):
            yield svc
    finally:
        await publisher.aclose()
        app.close()
