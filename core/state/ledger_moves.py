"""The turn ledger's moves on a worker's event loop: hold what a task runs, settle what
ended, both in one script — one round trip per turn of a chain instead of two, and no
hop to a thread (``tasks.chain``).

The sets are the turn ledger's (``core.state.ledger``: queued, scored by when due; held,
scored by a lease deadline); scores are integer milliseconds of the Redis server's clock.
A move first settles (the entries leave both sets), then holds (the entries leave the
queued set and are held until ``lease_s`` from now): an entry named in both ends held.

Part of the state room, the only room that speaks Redis commands (``core.state``); it
may call the Redis client and ``core.state.keys``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.state.client import Client
from core.state.keys import Keys

# KEYS: queued, held. ARGV: lease ms, how many to settle, the settled..., the held...
_MOVE = """local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
local settled = tonumber(ARGV[2])
for i = 3, 2 + settled do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
end
for i = 3 + settled, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], now + ARGV[1], ARGV[i])
end"""


class _Wired(Protocol):
    """What a process's Services hold (``core.process.wiring``): its Redis client."""

    @property
    def redis(self) -> Client: ...


class LedgerMoves:
    """Hold and settle turn ledger entries from an event loop; every call one round trip."""

    @classmethod
    def of(cls, svc: _Wired, key_prefix: str) -> LedgerMoves:
        """The moves through the process's own client (``svc``: its Services)."""
        return cls(svc.redis, key_prefix)

    def __init__(self, redis: Client, key_prefix: str) -> None:
        keys = Keys(key_prefix)
        self._keys = [keys.celery_ledger(), keys.celery_ledger_held()]
        self._move = redis.register_script(_MOVE)

    async def move(
        self, *, settle: Sequence[str] = (), hold: Sequence[str] = (), lease_s: float = 0.0
    ) -> None:
        """Settle the entries ``settle`` (their turns ended) and hold ``hold`` for
        ``lease_s`` from now, atomically. Nothing to do costs nothing."""
        if not settle and not hold:
            return
        args: list[str | int] = [round(lease_s * 1000), len(settle), *settle, *hold]
        await self._move(keys=self._keys, args=args)
