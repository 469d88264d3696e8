"""A run's event stream (``keys.events``): progress events written in a turn's save
transaction or on their own, read in order by relays, the console, the inspector and the
watchdog.

Owns the events streams and the set of ended runs (``keys.ended_runs``, filled as a run's
``run_finished`` event is written). Part of the state room, the only room that speaks
Redis commands; it may call the Redis client and ``core.state.keys`` only. The store
(``core.state.store.Store``) holds one as ``store.events``."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys
from core.types.events import RUN_EVENT, RunEvent, RunFinished


class EventLog:
    """The runs' event streams, on the store's Redis client and keys."""

    def __init__(self, redis: Redis, keys: Keys, maxlen: int) -> None:
        self.redis = redis
        self.keys = keys
        self.maxlen = maxlen

    async def emit(self, *events: RunEvent) -> None:
        """Write progress events now (outside any turn transaction)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            self.add(pipe, events[0].run_id if events else "", list(events))
            await pipe.execute()

    def add(self, pipe: object, run_id: str, events: list[RunEvent]) -> None:
        """Queue ``events`` on ``pipe`` (the caller's transaction or script recorder)."""
        queue: Any = pipe
        maxlen = str(self.maxlen)
        for event in events:
            # What ``pipe.xadd(key, {"event": …}, maxlen=…, approximate=True)`` queues,
            # without its argument checks; the event dumped by its own class's serializer
            # (the same bytes as RUN_EVENT.dump_json, without the union's dispatch).
            queue.execute_command(
                "XADD",
                self.keys.events(event.run_id or run_id),
                b"MAXLEN",
                b"~",
                maxlen,
                "*",
                "event",
                event.__pydantic_serializer__.to_json(event),
            )
            if isinstance(event, RunFinished):
                # For the library to learn from (core.runs.learning.learn_ended).
                pipe.sadd(self.keys.ended_runs(), event.run_id or run_id)  # type: ignore[attr-defined]

    async def read(
        self, run_id: str, after: str = "0-0", count: int = 100, block_ms: int | None = None
    ) -> list[tuple[str, RunEvent]]:
        """Events after stream id ``after``, oldest first."""
        reply: Any = await self.redis.xread(
            {self.keys.events(run_id): after}, count=count, block=block_ms
        )
        out: list[tuple[str, RunEvent]] = []
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                out.append((entry_id, RUN_EVENT.validate_json(fields["event"])))
        return out

    async def read_many(
        self, after: dict[str, str], count: int, block_ms: int | None
    ) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
        """Raw entries of several runs' streams (stream key → last id read) in one read:
        ``[(stream key, [(entry id, fields)])]`` (``core.state.event_hub``)."""
        streams: dict[Any, Any] = dict(after)
        reply: Any = await self.redis.xread(streams, count=count, block=block_ms)
        return list(reply or ())

    async def last_id(self, run_id: str) -> str | None:
        """The id of the run's newest event (it carries Redis's clock), or None."""
        last: Any = await self.redis.xrevrange(self.keys.events(run_id), count=1)
        return str(last[0][0]) if last else None
