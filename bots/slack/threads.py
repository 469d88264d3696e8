"""Where each run is shown in Slack, kept in Redis: the thread of a run (replies there reach
its agents), how far the run's relay got — a restarted bot resumes every relay where it
stopped instead of losing the run's progress or posting it twice — and which bot process
relays it (a lease, so several processes never relay one run twice)."""

from __future__ import annotations

from typing import Any

from core.types._base import Frozen

DEDUPE_TTL_S = 3600
# How long a thread stays linked to its run (answers to agents' questions arrive there).
THREAD_TTL_S = 7 * 24 * 3600


class Shown(Frozen):
    """A run being relayed into ``channel``/``thread``; ``last``: the last event relayed."""

    run_id: str
    channel: str
    thread: str
    last: str = "0-0"
    status_ts: str | None = None


def after(entry_id: str, last: str) -> bool:
    """Whether stream id ``entry_id`` comes after ``last`` ("ms-seq" ids)."""
    a, _, b = entry_id.partition("-")
    c, _, d = last.partition("-")
    return (int(a), int(b or 0)) > (int(c), int(d or 0))


class Threads:
    def __init__(self, redis: Any, key_prefix: str) -> None:
        self.redis = redis
        self.prefix = f"{key_prefix}:slack"
        self.relays_key = f"{self.prefix}:relays"

    async def first_time(self, event_id: str) -> bool:
        """True once per ``event_id``: Slack retries a slow delivery with the same id."""
        key = f"{self.prefix}:event:{event_id}"
        return bool(await self.redis.set(key, "1", nx=True, ex=DEDUPE_TTL_S))

    def _thread_key(self, channel: str, thread: str) -> str:
        return f"{self.prefix}:thread:{channel}:{thread}"

    async def link(self, shown: Shown) -> None:
        """Show ``shown.run_id`` in its thread from now on."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self._thread_key(shown.channel, shown.thread), shown.run_id, ex=THREAD_TTL_S)
            pipe.hset(self.relays_key, shown.run_id, shown.model_dump_json())
            await pipe.execute()

    async def run_in(self, channel: str, thread: str) -> str | None:
        run_id: str | None = await self.redis.get(self._thread_key(channel, thread))
        return run_id

    async def save(self, shown: Shown) -> None:
        """The relay's progress (after each event it relayed)."""
        await self.redis.hset(self.relays_key, shown.run_id, shown.model_dump_json())

    async def done(self, run_id: str) -> None:
        await self.redis.hdel(self.relays_key, run_id)

    # -- leases: one bot process relays each run --------------------------------------

    def _lease_key(self, run_id: str) -> str:
        return f"{self.prefix}:lease:{run_id}"

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Hold ``run_id`` for ``owner`` (True if it is free, lapsed, or already theirs)."""
        key, ms = self._lease_key(run_id), int(ttl_s * 1000)
        if await self.redis.set(key, owner, nx=True, px=ms):
            return True
        return bool(await self.redis.get(key) == owner)

    async def renew(self, run_ids: list[str], owner: str, ttl_s: float) -> list[str]:
        """Extend ``owner``'s leases on ``run_ids``; returns the runs whose lease lapsed
        or was taken over meanwhile (this process stalled longer than the lease)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for run_id in run_ids:
                pipe.get(self._lease_key(run_id))
            holders = await pipe.execute()
        kept = [r for r, h in zip(run_ids, holders, strict=True) if h == owner]
        async with self.redis.pipeline(transaction=False) as pipe:
            for run_id in kept:
                pipe.set(self._lease_key(run_id), owner, xx=True, px=int(ttl_s * 1000))
            await pipe.execute()
        return [r for r in run_ids if r not in kept]

    async def owns(self, run_id: str, owner: str) -> bool:
        return bool(await self.redis.get(self._lease_key(run_id)) == owner)

    async def release(self, run_id: str, owner: str) -> None:
        if await self.owns(run_id, owner):
            await self.redis.delete(self._lease_key(run_id))

    async def unfinished(self) -> list[Shown]:
        """Relays a previous bot process left running."""
        raw: Any = await self.redis.hgetall(self.relays_key)
        return [Shown.model_validate_json(v) for v in raw.values()]
