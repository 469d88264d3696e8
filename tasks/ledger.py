"""The turn ledger: the recovery of record for turns given to the broker.

The broker alone cannot be trusted with a turn. Celery's Redis transport takes a message
off the queue with BRPOP and records it as unacknowledged only once the worker has read
it: a message popped for a worker that is being killed is in neither place and is lost
(kombu #1836, celery #4354). And kombu gives a dead worker's unacknowledged messages back
only after its visibility timeout (an hour by default), under a lock that a worker killed
while holding it keeps for ``unacked_mutex_expire``. A lost turn is a stuck agent.

So every turn given to the broker is an entry here, in one of two states:

- *queued* (``{prefix}:celery-ledger``, scored by when it is due: publish time, or the
  end of a retry's back-off): recorded before the message is published;
- *held* (``{prefix}:celery-ledger:held``, scored by a lease deadline): a worker is
  running it. The task moves its entry queued → held when it starts, a chained turn is
  recorded held by the worker that will run it, and the worker renews the deadline of
  everything it holds every ``celery.lease_s / 3`` in one round trip.

The turn's end (applied, dropped as a duplicate, or given up) settles the entry: it
leaves both sets. Any turn-running process sweeps the ledger and claims

- held entries whose lease lapsed (their worker died), and
- queued entries due more than a grace period ago while the broker's queue is empty
  (the message went missing between the broker and a worker), or due more than
  ``celery.visibility_timeout_s`` ago whatever the queue holds;

and publishes them again under the same task id. The claim never forgets: it is one Lua
script that moves the entry to *held* under the claimer's lease, and only after the
message is published is it moved back to *queued* (if nobody took it meanwhile). A
claimer killed in between leaves a held entry whose lease lapses: it is claimed again.
Turns are idempotent by sequence number and guarded by a lease (core/agent/lease.py),
so a copy too many is dropped without a model call, never applied twice.

Scores are integer milliseconds of the Redis server's clock (``TIME`` in the scripts):
workers on hosts whose clocks disagree still agree on which leases lapsed.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from redis import Redis

from core.config import Settings
from core.scheduler.base import TurnJob

_SWEEP_BATCH = 100
_NOW = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

# KEYS: queued, held. ARGV: member. Due now.
_RECORD = _NOW + "redis.call('ZADD', KEYS[1], now, ARGV[1])"
# KEYS: queued, held. ARGV: lease ms, members... Queued (or not recorded) → held.
_HOLD = (
    _NOW
    + """for i = 2, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], now + ARGV[1], ARGV[i])
end"""
)
# KEYS: held. ARGV: lease ms, members... Only entries still held: a settled one stays gone.
_RENEW = _NOW + "for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + ARGV[1], ARGV[i]) end"
# KEYS: queued, held. ARGV: delay ms, expected deadline ("" = any), members...
# Held → queued, due after the delay; with a deadline, only entries still held under it.
_RELEASE = (
    _NOW
    + """local n = 0
for i = 3, #ARGV do
  local score = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if ARGV[2] == '' or (score and tonumber(score) == tonumber(ARGV[2])) then
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[1], now + ARGV[1], ARGV[i])
    n = n + 1
  end
end
return n"""
)
# KEYS: queued, held. ARGV: grace ms, visibility ms, queue empty (1/0), lease ms, batch.
# Returns the claimer's deadline, then the claimed members (now held under it).
_CLAIM = (
    _NOW
    + """local deadline = now + ARGV[4]
local out = {deadline}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[5])) do
  redis.call('ZADD', KEYS[2], deadline, m)
  out[#out + 1] = m
end
local ceiling = now - ARGV[2]
if ARGV[3] == '1' then ceiling = now - ARGV[1] end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ceiling, 'LIMIT', 0, ARGV[5])) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], deadline, m)
  out[#out + 1] = m
end
return out"""
)


def sweep_interval_s(settings: Settings) -> float:
    """How often leases are renewed and the ledger swept: a third of ``celery.lease_s``."""
    return max(0.2, settings.celery.lease_s / 3)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class TurnLedger:
    """The two sorted sets of one deployment (``{redis.key_prefix}:celery-ledger[:held]``).

    Synchronous (redis-py's thread-safe pool): used from publishing threads and Celery
    pool threads, never on an event loop. Every method is one round trip.
    """

    def __init__(self, redis: Redis, key_prefix: str) -> None:
        self._redis = redis  # decode_responses=True
        self.key = f"{key_prefix}:celery-ledger"
        self.held_key = f"{self.key}:held"
        self._keys = [self.key, self.held_key]
        self._record = redis.register_script(_RECORD)
        self._hold = redis.register_script(_HOLD)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._claim = redis.register_script(_CLAIM)

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

    @staticmethod
    def parse(member: str) -> tuple[str, TurnJob]:
        """The task id and the job of a member."""
        data = json.loads(member)
        return data["task"], TurnJob.model_validate(data["job"])

    def record(self, member: str) -> None:
        """Queued: about to be published."""
        self._record(keys=self._keys, args=[member])

    def hold(self, members: Iterable[str], lease_s: float) -> None:
        """Held by this worker until ``lease_s`` from now (the task started running it,
        or it is a chained turn this worker will run)."""
        self._hold(keys=self._keys, args=[_ms(lease_s), *members])

    def renew(self, members: Iterable[str], lease_s: float) -> None:
        """Extend the lease of entries this worker still holds (settled ones stay gone)."""
        self._renew(keys=[self.held_key], args=[_ms(lease_s), *members])

    def release(
        self, members: Iterable[str], delay_s: float = 0.0, deadline: int | None = None
    ) -> int:
        """Held → queued, due in ``delay_s`` (a retry's back-off). With ``deadline`` (a
        claim's), only the entries nobody took since the claim. How many moved."""
        args = [_ms(delay_s), "" if deadline is None else deadline, *members]
        return int(self._release(keys=self._keys, args=args))

    def settle(self, member: str) -> None:
        """The turn ran to its end (applied, dropped as a duplicate, or given up)."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zrem(self.key, member)
        pipe.zrem(self.held_key, member)
        pipe.execute()

    def claim_stale(
        self, *, grace_s: float, visibility_s: float, queue_empty: bool, lease_s: float
    ) -> tuple[int, list[str]]:
        """Claim the entries to publish again (see the module docstring): they are held
        under the returned deadline until :meth:`release` after publishing."""
        args = [_ms(grace_s), _ms(visibility_s), int(queue_empty), _ms(lease_s), _SWEEP_BATCH]
        reply: Any = self._claim(keys=self._keys, args=args)
        return int(reply[0]), [str(m) for m in reply[1:]]

    def pending(self) -> int:
        """Entries queued or held: turns given to the broker that have not ended."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zcard(self.key)
        pipe.zcard(self.held_key)
        return sum(int(n) for n in pipe.execute())

    def close(self) -> None:
        self._redis.close()


class Holdings:
    """The ledger entries this process holds (counted: a duplicate delivery of a turn
    may run beside the original in the same process). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Counter[str] = Counter()

    def add(self, member: str) -> None:
        with self._lock:
            self._held[member] += 1

    def discard(self, member: str) -> None:
        with self._lock:
            self._held[member] -= 1
            if self._held[member] <= 0:
                del self._held[member]

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self._held)
