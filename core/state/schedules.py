"""Schedules in Redis (keys in ``core.state.keys``): each schedule as JSON, the set of all,
the set per channel, the due set (scored by the next slot; a paused schedule is out of
it), a claim per firing slot (``SET NX`` with a TTL: of several processes exactly one
fires a slot) and the firings stream the chat bots read. Every change of a schedule is
an optimistic transaction (``WATCH``) on its record together with its index entries.
Part of the state room; called by ``core.schedules`` and ``core.runs``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redis.exceptions import WatchError

from core.state.keys import Keys
from core.state.store import Store
from core.types.schedules import Firing, Schedule

# A change: the schedule as it is → the schedule to save (None: leave it as it is).
Change = Callable[[Schedule], Schedule | None]
_TRIES = 20


class ScheduleStore:
    """The schedules of one deployment, in the Redis of the core ``store``."""

    def __init__(self, store: Store) -> None:
        self.redis: Any = store.redis
        self.keys: Keys = store.keys

    def _index(self, pipe: Any, s: Schedule) -> None:
        pipe.set(self.keys.schedule(s.id), s.model_dump_json())
        pipe.sadd(self.keys.schedules(), s.id)
        pipe.sadd(self.keys.schedules_in(s.place.key), s.id)
        if s.paused:
            pipe.zrem(self.keys.schedules_due(), s.id)
        else:
            pipe.zadd(self.keys.schedules_due(), {s.id: s.next_at})

    async def add(self, s: Schedule, max_in_place: int) -> bool:
        """Keep ``s``; False if its channel holds ``max_in_place`` schedules already."""
        key = self.keys.schedules_in(s.place.key)
        for _ in range(_TRIES):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    if await pipe.scard(key) >= max_in_place:
                        return False
                    pipe.multi()
                    self._index(pipe, s)
                    await pipe.execute()
                    return True
                except WatchError:
                    continue
        raise RuntimeError("the channel's schedules kept changing; try again")

    async def get(self, schedule_id: str) -> Schedule | None:
        raw = await self.redis.get(self.keys.schedule(schedule_id))
        return Schedule.model_validate_json(raw) if raw else None

    async def update(self, schedule_id: str, change: Change) -> Schedule | None:
        """Apply ``change`` to the schedule as it is, atomically (retried while another
        process changes it meanwhile); the schedule saved, or None (gone, or unchanged)."""
        key = self.keys.schedule(schedule_id)
        for _ in range(_TRIES):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if not raw:
                        return None
                    new = change(Schedule.model_validate_json(raw))
                    if new is None:
                        return None
                    pipe.multi()
                    self._index(pipe, new)
                    await pipe.execute()
                    return new
                except WatchError:
                    continue
        raise RuntimeError(f"schedule {schedule_id} kept changing; try again")

    async def delete(self, s: Schedule) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.schedule(s.id))
            pipe.srem(self.keys.schedules(), s.id)
            pipe.srem(self.keys.schedules_in(s.place.key), s.id)
            pipe.zrem(self.keys.schedules_due(), s.id)
            await pipe.execute()

    async def _many(self, ids: list[str]) -> list[Schedule]:
        if not ids:
            return []
        raws = await self.redis.mget([self.keys.schedule(i) for i in ids])
        found = [Schedule.model_validate_json(r) for r in raws if r]
        return sorted(found, key=lambda s: (s.paused, s.next_at, s.created_at))

    async def in_place(self, place_key: str) -> list[Schedule]:
        """The schedules of one channel, the soonest first (paused ones last)."""
        return await self._many(
            sorted(await self.redis.smembers(self.keys.schedules_in(place_key)))
        )

    async def every(self) -> list[Schedule]:
        return await self._many(sorted(await self.redis.smembers(self.keys.schedules())))

    async def due(self, at: float, limit: int = 100) -> list[str]:
        """Ids of the schedules whose next slot is at or before ``at``."""
        ids: list[str] = await self.redis.zrangebyscore(
            self.keys.schedules_due(), "-inf", at, start=0, num=limit
        )
        return ids

    async def behind(self, schedule_ids: list[str], at: float) -> None:
        """Put schedules that were due and did not fire behind the others due by ``at``
        (their due score moved up to ``at``; a schedule moved on meanwhile, paused or
        deleted is left as it is: ``XX GT``), so a few that cannot fire yet never keep
        the others of a tick's batch from firing. Their records are not changed."""
        if not schedule_ids:
            return
        key = self.keys.schedules_due()
        await self.redis.zadd(key, dict.fromkeys(schedule_ids, at), xx=True, gt=True)

    async def soonest(self) -> float | None:
        found = await self.redis.zrange(self.keys.schedules_due(), 0, 0, withscores=True)
        return float(found[0][1]) if found else None

    async def claim(self, schedule_id: str, slot: int, ttl_s: int) -> bool:
        """True for the one process that fires ``slot`` of the schedule."""
        key = self.keys.schedule_slot(schedule_id, slot)
        return bool(await self.redis.set(key, "1", nx=True, ex=ttl_s))

    async def announce(self, firing: Firing, maxlen: int) -> str:
        """Append ``firing`` to the stream the bots read; its entry id."""
        entry: str = await self.redis.xadd(
            self.keys.schedule_firings(),
            {"firing": firing.model_dump_json()},
            maxlen=maxlen,
            approximate=True,
        )
        return entry

    async def firings(
        self, after: str, count: int = 100, block_ms: int | None = None
    ) -> list[tuple[str, Firing]]:
        """Firings after stream id ``after`` (``"0-0"``: from the start), oldest first."""
        got = await self.redis.xread(
            {self.keys.schedule_firings(): after}, count=count, block=block_ms
        )
        out: list[tuple[str, Firing]] = []
        for _stream, entries in got or []:
            for entry_id, fields in entries:
                out.append((entry_id, Firing.model_validate_json(fields["firing"])))
        return out

    async def last_firing_id(self) -> str:
        """The stream id of the latest firing, ``"0-0"`` if none."""
        got = await self.redis.xrevrange(self.keys.schedule_firings(), count=1)
        return str(got[0][0]) if got else "0-0"
