"""The intents stream (``keys.intents``, consumer group ``processors``), each intent's
done-marker and its failure count: what makes an intent processed exactly once.

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client, ``core.state.keys`` and the event log (a processor's events are
written with the marker). What an intent does lives above (``core.effects.intents``).
The store holds one as ``store.intents``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError, WatchError

from core.state.event_log import EventLog
from core.state.keys import Keys
from core.types.events import RunEvent
from core.types.intents import INTENT, Intent

GROUP = "processors"
_DONE_TTL_S = 7 * 24 * 3600

Entry = tuple[str, dict[str, str]]


class IntentQueue:
    """Intents saved by turns and not yet processed, on the store's client and keys."""

    def __init__(self, redis: Redis, keys: Keys, events: EventLog) -> None:
        self.redis = redis
        self.keys = keys
        self.events = events

    def save_write(self, intents: list[Intent]) -> Callable[[Any], None]:
        """The command (for the turn's save transaction) that records its intents."""
        stream = self.keys.intents()

        def write(pipe: Any) -> None:
            for intent in intents:
                pipe.xadd(stream, {"i": INTENT.dump_json(intent)})

        return write

    async def take(self, consumer: str, idle_ms: int, count: int) -> list[Entry]:
        """Entries idle for ``idle_ms`` under a dead consumer, then new ones (the group is
        created on first use)."""
        try:
            return await self._take(consumer, idle_ms, count)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
        await self.ensure_group()
        return await self._take(consumer, idle_ms, count)

    async def _take(self, consumer: str, idle_ms: int, count: int) -> list[Entry]:
        stream = self.keys.intents()
        # Both in one round trip (the background loop takes intents on every tick).
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xautoclaim(
                stream, GROUP, consumer, min_idle_time=idle_ms, start_id="0-0", count=count
            )
            pipe.xreadgroup(GROUP, consumer, {stream: ">"}, count=count)
            claimed, fresh = await pipe.execute()
        entries: list[Entry] = list(claimed[1]) if claimed else []
        for _stream, items in fresh or ():
            entries.extend(items)
        return entries

    async def ensure_group(self) -> None:
        try:
            await self.redis.xgroup_create(self.keys.intents(), GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def ack(self, entry_id: str) -> None:
        await self.redis.xack(self.keys.intents(), GROUP, entry_id)

    async def is_done(self, key: str) -> bool:
        return bool(await self.redis.exists(self.keys.intent_done(key)))

    async def count_failure(self, key: str) -> int:
        """One more failed attempt at the intent ``key``; how many so far."""
        return int(await self.redis.hincrby(self.keys.intent_failures(), key, 1))

    async def finish(self, entry_id: str, key: str, run_id: str, events: list[RunEvent]) -> bool:
        """Mark the intent done, write its events, acknowledge and delete its entry, in one
        transaction; False when another process finished it meanwhile (it took the entry
        over after this one's claim went idle): nothing is recorded twice."""
        done_key = self.keys.intent_done(key)
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(done_key)
                if await pipe.exists(done_key):
                    await pipe.unwatch()
                    await self.ack(entry_id)
                    return False
                pipe.multi()
                pipe.set(done_key, "1", ex=_DONE_TTL_S)
                self.events.add(pipe, run_id, events)
                pipe.xack(self.keys.intents(), GROUP, entry_id)
                pipe.xdel(self.keys.intents(), entry_id)
                await pipe.execute()
            except WatchError:
                return False
        return True
