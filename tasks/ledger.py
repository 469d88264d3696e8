"""Turns published but not yet run: the safety net under the broker.

Celery's Redis transport takes a message off the queue with BRPOP and records it as
unacknowledged only once the worker has read it. A message popped for a worker that is
being killed is in neither place and is lost (kombu #1836, celery #4354): in the crash
tests here, 6 of 14 runs that killed a worker right after a save lost a turn this way.
A lost turn is a stuck agent: nothing else would ever schedule it again.

So every publish is first recorded here (a sorted set scored by publish time, one member
per message), and the task removes its member when the turn has run. Any process that
runs turns sweeps the set: a member older than ``celery.visibility_timeout_s`` was lost
(or its turn is running that long, which the broker redelivers anyway) and is published
again. Turns are idempotent by sequence number, so a copy too many is dropped, never
applied twice. Cost: one ZADD per publish and one ZREM per turn.
"""

from __future__ import annotations

import json
import time
from typing import Any

from redis import Redis

from core.config import Settings
from core.scheduler.base import TurnJob

_SWEEP_BATCH = 100


def sweep_interval_s(settings: Settings) -> float:
    """How often lost messages are looked for: a quarter of the visibility timeout, 1–60 s."""
    return max(1.0, min(60.0, settings.celery.visibility_timeout_s / 4))


class TurnLedger:
    """Sorted set ``{redis.key_prefix}:celery-ledger`` of published, unfinished turns.

    Synchronous (redis-py's thread-safe pool): it is used from publishing threads and
    from Celery pool threads, never on an event loop.
    """

    def __init__(self, redis: Redis, key_prefix: str) -> None:
        self._redis = redis  # decode_responses=True
        self.key = f"{key_prefix}:celery-ledger"

    @classmethod
    def for_settings(cls, settings: Settings) -> TurnLedger:
        """The ledger in the Redis of ``redis.url`` (where the turns' state lives)."""
        return cls(
            Redis.from_url(settings.redis.url, decode_responses=True), settings.redis.key_prefix
        )

    @staticmethod
    def member(task_id: str, job: TurnJob | dict[str, Any]) -> str:
        data = job.model_dump(mode="json") if isinstance(job, TurnJob) else job
        return json.dumps({"task": task_id, "job": data}, sort_keys=True, separators=(",", ":"))

    def record(self, task_id: str, job: TurnJob) -> None:
        """Before publishing: the message ``task_id`` carries ``job``."""
        self._redis.zadd(self.key, {self.member(task_id, job): time.time()})

    def settle(self, task_id: str, job: TurnJob | dict[str, Any]) -> None:
        """The message ran to its end (applied, dropped as a duplicate, or given up)."""
        self._redis.zrem(self.key, self.member(task_id, job))

    def take_stale(self, older_than_s: float, now: float | None = None) -> list[TurnJob]:
        """Claim the messages published more than ``older_than_s`` ago and still unsettled.

        ZREM is the claim: of several sweeping processes, one republishes each.
        """
        ceiling = (now if now is not None else time.time()) - older_than_s
        stale: Any = self._redis.zrangebyscore(self.key, "-inf", ceiling, start=0, num=_SWEEP_BATCH)
        jobs = []
        for member in stale:
            if self._redis.zrem(self.key, member):
                jobs.append(TurnJob.model_validate(json.loads(member)["job"]))
        return jobs

    def pending(self) -> int:
        return int(self._redis.zcard(self.key))

    def close(self) -> None:
        self._redis.close()
