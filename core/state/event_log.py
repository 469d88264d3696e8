"""A run's event stream in Redis (``{prefix}:run:{run}:events``): progress events written
in a turn's transaction or on their own, read in order by relays, the console and the
inspector. A part of :class:`core.state.store.Store`."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys
from core.types.events import RUN_EVENT, RunEvent, RunFinished


class EventLog:
    """The events side of the store (``redis``, ``keys`` and ``events_maxlen`` are the
    store's)."""

    redis: Redis
    keys: Keys
    events_maxlen: int

    async def emit(self, *events: RunEvent) -> None:
        """Write progress events now (outside any turn transaction)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            self.add_events(pipe, events[0].run_id if events else "", list(events))
            await pipe.execute()

    def add_events(self, pipe: object, run_id: str, events: list[RunEvent]) -> None:
        for event in events:
            pipe.xadd(  # type: ignore[attr-defined]
                self.keys.events(event.run_id or run_id),
                {"event": RUN_EVENT.dump_json(event)},
                maxlen=self.events_maxlen,
                approximate=True,
            )
            if isinstance(event, RunFinished):
                # For the library to learn from (core.runs.learning.learn_ended).
                pipe.sadd(self.keys.ended_runs(), event.run_id or run_id)  # type: ignore[attr-defined]

    async def read_events(
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
