"""Where each run is shown in a chat platform, kept in Redis: the thread of a run (replies
there reach its agents), how far the run's relay got — a restarted bot resumes every relay where it
stopped instead of losing the run's progress or posting it twice — and which bot process
relays it (a lease — redis-py's ``Lock`` — so several processes never relay one run twice)."""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from redis.asyncio.lock import Lock
from redis.exceptions import LockError, LockNotOwnedError

from bots.chat.ports import Place
from core.types._base import Frozen

DEDUPE_TTL_S = 3600
# How long a thread stays linked to its run (answers to agents' questions arrive there).
THREAD_TTL_S = 7 * 24 * 3600
# Renews many leases at once: KEYS the leases, ARGV their holders' tokens, then their
# times (ms); 1 for each lease renewed, 0 for one lapsed or held by another process.
_RENEW_ALL = """
local out, n = {}, #KEYS
for i, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[i] then
    redis.call('pexpire', key, ARGV[n + i])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
"""


class Shown(Frozen):
    """A run being relayed into ``channel``/``thread``; ``last``: the last event relayed;
    ``status_ts``: the status message a relay from before the outbox posted."""

    run_id: str
    channel: str
    thread: str
    last: str = "0-0"
    status_ts: str | None = None

    @property
    def place(self) -> Place:
        return Place(self.channel, self.thread)


def after(entry_id: str, last: str) -> bool:
    """Whether stream id ``entry_id`` comes after ``last`` ("ms-seq" ids)."""
    a, _, b = entry_id.partition("-")
    c, _, d = last.partition("-")
    return (int(a), int(b or 0)) > (int(c), int(d or 0))


class Threads:
    """One platform's threads and relays, under ``{key_prefix}:{platform}:``."""

    def __init__(self, redis: Any, key_prefix: str, platform: str) -> None:
        self.redis = redis
        self.prefix = f"{key_prefix}:{platform}"
        self.relays_key = f"{self.prefix}:relays"
        # fakeredis (embedded mode) runs no Lua, which redis-py's Lock renews with.
        self.in_process = type(redis).__module__.partition(".")[0] == "fakeredis"
        self._renew_all: Any = None

    async def first_time(self, event_id: str) -> bool:
        """True once per ``event_id``: platforms retry a slow delivery with the same id."""
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

    def saving(self, pipe: Any, shown: Shown) -> None:
        """The relay's progress (after each event it queued posts for), in ``pipe``."""
        pipe.hset(self.relays_key, shown.run_id, shown.model_dump_json())

    def forgetting(self, pipe: Any, run_id: str) -> None:
        """The run's relay is over (everything delivered), in ``pipe``."""
        pipe.hdel(self.relays_key, run_id)

    async def save(self, shown: Shown) -> None:
        await self.redis.hset(self.relays_key, shown.run_id, shown.model_dump_json())

    async def done(self, run_id: str) -> None:
        await self.redis.hdel(self.relays_key, run_id)

    # -- leases: one bot process relays each run --------------------------------------

    def _lease_key(self, run_id: str) -> str:
        return f"{self.prefix}:lease:{run_id}"

    async def claim(self, run_id: str, owner: str, ttl_s: float) -> Lock | None:
        """Hold ``run_id`` for ``owner`` for ``ttl_s`` (renewed with ``renew``): the lease,
        or None while another holder's lease lives (a lapsed one is free)."""
        kind = _InProcessLock if self.in_process else Lock
        # Not thread-local: the lease is taken, renewed and released by different tasks.
        lease = kind(
            self.redis, self._lease_key(run_id), timeout=ttl_s, blocking=False, thread_local=False
        )
        return lease if await lease.acquire(token=owner) else None

    async def renew(self, leases: dict[str, Lock]) -> list[str]:
        """Extend each lease (run id → lease) to its full time again; returns the runs
        whose lease lapsed or was taken over meanwhile (this process stalled longer than
        the lease). Each renewal checks the holder and extends in one step in Redis (a
        lease another process took stays theirs), as ``Lock.reacquire`` does; all of
        them in one script call (measured: 4 µs of CPU per lease and round; 21 µs for a
        pipeline of reacquires; one reacquire call per lease, gathered, ran the
        connection pool out past about 100 leases)."""
        if not leases:
            return []
        if self.in_process:
            return [run_id for run_id, lease in leases.items() if not await _kept(lease)]
        if self._renew_all is None:
            self._renew_all = self.redis.register_script(_RENEW_ALL)
        held = list(leases.values())
        timeouts = [int((lease.timeout or 0) * 1000) for lease in held]
        args = [lease.local.token for lease in held] + timeouts
        kept = await self._renew_all(keys=[lease.name for lease in held], args=args)
        return [run_id for run_id, ok in zip(leases, kept, strict=True) if ok != 1]

    @staticmethod
    async def holds(lease: Lock) -> bool:
        """Whether ``lease`` is still its holder's (not lapsed, not taken over)."""
        return bool(await lease.owned())

    @staticmethod
    async def release(lease: Lock) -> None:
        """Give the run up; a lease that lapsed or was taken over meanwhile is left as is."""
        with contextlib.suppress(LockError):  # LockNotOwnedError, or released before
            await lease.release()

    async def unfinished(self) -> list[Shown]:
        """Relays a previous bot process left running."""
        raw: Any = await self.redis.hgetall(self.relays_key)
        return [Shown.model_validate_json(v) for v in raw.values()]

    async def unheld(self, skip: set[str]) -> list[Shown]:
        """The unfinished relays nobody holds a lease on (but those in ``skip``): in
        three round trips, whose answers stay small while every run is held."""
        run_ids = [r for r in await self.redis.hkeys(self.relays_key) if r not in skip]
        if not run_ids:
            return []
        holders = await self.redis.mget([self._lease_key(r) for r in run_ids])
        free = [r for r, holder in zip(run_ids, holders, strict=True) if holder is None]
        if not free:
            return []
        raw = await self.redis.hmget(self.relays_key, free)
        return [Shown.model_validate_json(v) for v in raw if v is not None]


async def _kept(lease: Lock) -> bool:
    try:
        return bool(await lease.reacquire())
    except LockError:  # LockNotOwnedError: lapsed, or another holder has it
        return False


class _InProcessLock(Lock):
    """A lease in an in-process Redis (fakeredis, embedded mode: one bot process), which
    runs no Lua scripts: the holder is checked, then the lease extended or removed. Only
    this process uses that Redis, and it relays each run from one task (``Relays``)."""

    async def do_release(self, expected_token: bytes) -> None:
        if not await self.owned():
            raise LockNotOwnedError("Cannot release a lock that's no longer owned")
        await self.redis.delete(self.name)

    async def do_extend(self, additional_time: float, replace_ttl: bool) -> Literal[True]:
        ms = int(additional_time * 1000)
        if not await self.owned():
            raise LockNotOwnedError("Cannot extend a lock that's no longer owned")
        if not replace_ttl:
            ms += max(0, await self.redis.pttl(self.name))
        await self.redis.pexpire(self.name, ms)
        return True

    async def do_reacquire(self) -> Literal[True]:
        assert self.timeout is not None  # reacquire() checked it
        return await self.do_extend(self.timeout, True)
