"""Shared set-up of the tests that run real worker processes (``python -m tasks.worker``)
against the test Redis and the OpenAI-compatible fake, and kill some of them: the
workers' environment (fault points on, a key prefix of their own, the fake as their
model), starting them and waiting until they are ready, arming a fault point, and the
test's own client (services on a publisher of its own) that starts runs and reads them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from redis import Redis as SyncRedis
from redis.asyncio import Redis

from core.agent import faults
from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import REDIS_URL
from tests.integration.processes import Process, cleanup_all, worker_env

FAKE_MODEL = "openai/fake-model"


def fault_worker_env(prefix: str, llm_base: str, **settings: str) -> dict[str, str]:
    """A worker's environment: fault points on (``CARAMBA_FAULTS``), the test Redis under
    ``prefix``, the fake at ``llm_base`` as its model; plus ``settings`` (``worker_env``)."""
    return worker_env(
        faults="1",
        redis__url=REDIS_URL,
        redis__key_prefix=prefix,
        llm__model=FAKE_MODEL,
        llm__api_base=llm_base,
        **settings,
    )


@contextlib.contextmanager
def running_workers(
    env: dict[str, str], count: int, name: str = "worker"
) -> Iterator[list[Process]]:
    """``count`` worker processes, each ready (its turn runtime started) when entered; all
    stopped together (and their logs removed) on the way out."""
    procs = [Process.worker(env, f"{name}{i}") for i in range(count)]
    try:
        for proc in procs:
            proc.wait_for(" ready.", timeout=120)  # several imports of litellm on two cores
        yield procs
    finally:
        cleanup_all(procs)


@contextlib.contextmanager
def fault_arming(prefix: str) -> Iterator[Callable[[str], object]]:
    """A function that arms fault point ``point`` for the workers under ``prefix`` (the
    first process to reach it kills itself), callable from the fake's threads."""
    sync = SyncRedis.from_url(REDIS_URL)
    try:
        yield lambda point: sync.set(faults.key(prefix, point), 1)
    finally:
        sync.close()


class WorkerClient:
    """What starts runs and reads them beside the workers: services (a model that is never
    asked: the workers' turns call the fake) on a publisher of its own, under ``prefix``;
    ``sections`` are settings of the client (``celery={"lease_s": 1.0}``)."""

    def __init__(
        self,
        prefix: str,
        publisher: type[CeleryScheduler] = CeleryScheduler,
        **sections: dict[str, Any],
    ) -> None:
        where = {"url": REDIS_URL, "key_prefix": prefix}
        self.settings = load_settings(None, redis=where, **sections)
        self.app = make_app(self.settings)
        self.publisher = publisher(self.app, self.settings)
        self.redis = Redis.from_url(REDIS_URL, decode_responses=True)
        self.svc = build_services(
            self.settings, self.publisher, llm=ScriptedModel(), redis=self.redis
        )

    async def pending(self) -> int:
        """Entries still in the turn ledger."""
        return await asyncio.to_thread(self.publisher.ledger.pending)

    async def settled(self, within_s: float) -> int:
        """The ledger's entries left once it is empty or ``within_s`` passed (a worker
        settles its last ones with its next renewal; a dead one's once their leases lapsed
        and a survivor's sweep dropped them as applied)."""
        deadline = asyncio.get_running_loop().time() + within_s
        while True:
            left = await self.pending()
            if left == 0 or asyncio.get_running_loop().time() > deadline:
                return left
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        await self.publisher.aclose()
        await self.svc.aclose()  # its model, and the Redis client
        self.app.close()
