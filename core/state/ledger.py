"""The turn ledger's two sorted sets (``keys.celery_ledger``: queued, scored by when due;
``keys.celery_ledger_held``: held, scored by a lease deadline) and the Lua scripts that
move entries between them, each one round trip. What the ledger is for, and the Celery
glue around it, live in ``tasks.ledger``; here an entry is an opaque string.

Scores are integer milliseconds of the Redis server's clock (``TIME`` in the scripts):
workers on hosts whose clocks disagree still agree on which leases lapsed.

Synchronous (redis-py's thread-safe pool): used from publishing threads and Celery pool
threads, never on an event loop. Part of the state room, the only room that speaks Redis
commands (``core.state``); it may call the Redis client and ``core.state.keys``. The
broker's queue length (``broker_queue_length``) is read here too, for the same reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from redis import Redis

from core.state.keys import Keys

# The synchronous client (the Celery side's threads).
SyncClient = Redis

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
# KEYS: queued, held. ARGV: lease ms, how many to settle, the settled..., the renewed...
# Settled entries leave both sets; renewed ones only if still held: a settled one stays gone.
_RENEW = (
    _NOW
    + """local settled = tonumber(ARGV[2])
for i = 3, 2 + settled do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
end
for i = 3 + settled, #ARGV do redis.call('ZADD', KEYS[2], 'XX', now + ARGV[1], ARGV[i]) end"""
)
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


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class LedgerSets:
    """The queued and held sets of one deployment; every method is one round trip."""

    def __init__(self, redis: Redis, key_prefix: str) -> None:
        self._redis = redis  # decode_responses=True
        keys = Keys(key_prefix)
        self.key = keys.celery_ledger()
        self.held_key = keys.celery_ledger_held()
        self._keys = [self.key, self.held_key]
        self._record = redis.register_script(_RECORD)
        self._hold = redis.register_script(_HOLD)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._claim = redis.register_script(_CLAIM)

    def record(self, member: str) -> None:
        """Queued: about to be published."""
        self._record(keys=self._keys, args=[member])

    def hold(self, members: Iterable[str], lease_s: float) -> None:
        """Held by this worker until ``lease_s`` from now (the task started running it,
        or it is a chained turn this worker will run)."""
        self._hold(keys=self._keys, args=[_ms(lease_s), *members])

    def renew(self, members: Iterable[str], lease_s: float, settle: Sequence[str] = ()) -> None:
        """Extend the lease of entries this worker still holds (settled ones stay gone),
        first settling ``settle`` (turns that ended since the last renewal)."""
        self._renew(keys=self._keys, args=[_ms(lease_s), len(settle), *settle, *members])

    def release(
        self, members: Iterable[str], delay_s: float = 0.0, deadline: int | None = None
    ) -> int:
        """Held → queued, due in ``delay_s`` (a retry's back-off). With ``deadline`` (a
        claim's), only the entries nobody took since the claim. How many moved."""
        args = [_ms(delay_s), "" if deadline is None else deadline, *members]
        return int(self._release(keys=self._keys, args=args))

    def settle(self, member: str) -> None:
        """The turn ran to its end (applied, dropped as a duplicate, or given up)."""
        pipe = self._redis.pipeline(transaction=True)
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


def broker_queue_length(redis: Redis, lists: Sequence[str]) -> int:
    """How many messages wait in the broker's Redis ``lists`` (one round trip)."""
    pipe = redis.pipeline(transaction=False)
    for name in lists:
        pipe.llen(name)
    return sum(int(n) for n in pipe.execute())
