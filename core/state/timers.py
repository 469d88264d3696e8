"""The timers' sorted set (``keys.timers``): due-later actions scored by when they are
due, shared by every process. ZREM is the claim, so each timer fires once.

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client and ``core.state.keys``. What a timer is and what firing one does
live above (``core.effects.timers``, ``core.process.background``); here a timer is its
JSON. The store holds one as ``store.timers``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys


class TimerSet:
    """Timers kept as JSON members of one sorted set."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        # Told the due time of every timer this process adds: the background loop sleeps
        # until the soonest timer it knows of (``core.process.background``).
        self._watchers: list[Callable[[float], None]] = []

    def watch(self, added: Callable[[float], None]) -> Callable[[], None]:
        """Call ``added(at)`` after each timer this process adds; returns the undo."""
        self._watchers.append(added)
        return lambda: self._watchers.remove(added)

    async def add(self, timer: str, at: float) -> None:
        """Keep ``timer`` until ``at`` (the same timer again: its time is replaced)."""
        await self.redis.zadd(self.keys.timers(), {timer: at})
        for added in list(self._watchers):
            added(at)

    async def soonest(self) -> float | None:
        """When the soonest timer is due (None: there is none)."""
        found: Any = await self.redis.zrange(self.keys.timers(), 0, 0, withscores=True)
        return float(found[0][1]) if found else None

    async def remove(self, timer: str) -> None:
        await self.redis.zrem(self.keys.timers(), timer)

    async def due(self, now: float, count: int) -> list[str]:
        """Up to ``count`` timers due by ``now``, soonest first (not claimed yet)."""
        found: Any = await self.redis.zrangebyscore(
            self.keys.timers(), "-inf", now, start=0, num=count
        )
        return list(found or ())

    async def claim(self, timer: str) -> bool:
        """Take ``timer`` out; True for the one process that did (it fires it)."""
        return bool(await self.redis.zrem(self.keys.timers(), timer))
