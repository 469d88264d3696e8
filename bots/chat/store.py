"""The chat layer's own small store: with its runs' outboxes (:mod:`bots.chat.store_outbox`),
the one part of ``bots/`` that speaks Redis.

What the chat layer and its adapters keep — threads linked to runs, the relays' progress
and leases, each run's outbox and redraws, the adapters' small records (Discord's result
messages and names, Slack's stream and upload progress, the web chat's threads) — under
``{redis.key_prefix}:{platform}:`` (``bots.chat.keys``; for Slack, the keys it always
had). Core state (runs, agents, events) is read through ``core.state``, never here.
Adapters get a :class:`ChatStore` (``ChatStore.of(svc, "slack")``), never the client.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from redis.asyncio.lock import Lock
from redis.exceptions import LockError, LockNotOwnedError

from bots.chat.keys import ChatKeys
from bots.chat.store_outbox import OutboxStore
from core.state.keys import Keys

if TYPE_CHECKING:
    from core.services import Services
    from core.state.store import Store

# A bot process's hold on a run it relays (``ChatStore.claim``).
Lease = Lock
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


class ChatStore(OutboxStore):
    """One platform's part of Redis (``redis``: a client decoding responses); its runs'
    outboxes are :class:`~bots.chat.store_outbox.OutboxStore`'s."""

    def __init__(self, redis: Any, key_prefix: str, platform: str) -> None:
        self.redis, self.platform = redis, platform
        self.keys = ChatKeys(key_prefix, platform)
        self._core_keys = Keys(key_prefix)  # the WAIT's marker (core.state.durable_writes)
        # fakeredis (embedded mode) runs no Lua, which redis-py's Lock renews with.
        self.in_process = type(redis).__module__.partition(".")[0] == "fakeredis"
        self._renew_all: Any = None

    @classmethod
    def of(cls, svc: Services, platform: str) -> ChatStore:
        """``platform``'s store in the Redis of the core services ``svc``."""
        return cls(svc.redis, svc.settings.redis.key_prefix, platform)

    @classmethod
    def beside(cls, store: Store, platform: str) -> ChatStore:
        """``platform``'s store in the Redis of the core ``store`` (the run inspector)."""
        return cls(store.redis, store.keys.prefix, platform)

    # -- small records ------------------------------------------------------------------
    async def once(self, key: str, ttl_s: float, value: str = "1") -> bool:
        """Keep ``value`` at ``key`` unless something is there; whether it was kept."""
        return bool(await self.redis.set(key, value, nx=True, ex=int(ttl_s)))

    async def get(self, key: str) -> str | None:
        return cast("str | None", await self.redis.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return list(await self.redis.mget(list(keys))) if keys else []

    async def put(self, key: str, value: str, ttl_s: float) -> None:
        await self.redis.set(key, value, ex=int(ttl_s))

    async def exists(self, key: str) -> bool:
        return bool(await self.redis.exists(key))

    async def forget(self, *keys: str) -> None:
        await self.redis.delete(*keys)

    async def progress(self, key: str) -> dict[str, str]:
        """A hash of progress (an upload's, a stream's), empty if none is kept."""
        return dict(await self.redis.hgetall(key) or {})

    async def keep(self, key: str, ttl_s: float, fields: Mapping[str, Any]) -> None:
        """Write ``fields`` into the progress hash ``key``, kept ``ttl_s`` from now."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=dict(fields))
            pipe.expire(key, int(ttl_s))
            await pipe.execute()

    # -- a thread kept as a stream of changes (the web chat) ------------------------------
    async def append(self, key: str, fields: Mapping[str, str], maxlen: int, ttl_s: float) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(key, dict(fields), maxlen=maxlen, approximate=True)
            pipe.expire(key, int(ttl_s))
            await pipe.execute()

    async def entries(self, key: str) -> list[tuple[str, dict[str, str]]]:
        return list(await self.redis.xrange(key))

    async def last_entry(self, key: str) -> str | None:
        found: Any = await self.redis.xrevrange(key, count=1)
        return str(found[0][0]) if found else None

    # -- threads and relays -------------------------------------------------------------
    async def link(self, run_id: str, channel: str, thread: str, relay: str, ttl_s: float) -> None:
        """Link the thread to ``run_id`` and save its relay's progress, together."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.thread(channel, thread), run_id, ex=int(ttl_s))
            pipe.hset(self.keys.relays, run_id, relay)
            await pipe.execute()

    async def save_relay(self, run_id: str, relay: str) -> None:
        await self.redis.hset(self.keys.relays, run_id, relay)

    async def drop_relay(self, run_id: str) -> None:
        await self.redis.hdel(self.keys.relays, run_id)

    async def relays(self, run_ids: Sequence[str] | None = None) -> dict[str, str]:
        """The relays' progress: all, or those of ``run_ids`` that have one."""
        if run_ids is None:
            return dict(await self.redis.hgetall(self.keys.relays))
        if not run_ids:
            return {}
        found = await self.redis.hmget(self.keys.relays, list(run_ids))
        return {r: v for r, v in zip(run_ids, found, strict=True) if v is not None}

    async def unheld(self, skip: set[str]) -> dict[str, str]:
        """The relays nobody holds a lease on (but those in ``skip``): 3 small round trips."""
        run_ids = [r for r in await self.redis.hkeys(self.keys.relays) if r not in skip]
        if not run_ids:
            return {}
        holders = await self.get_many([self.keys.lease(r) for r in run_ids])
        return await self.relays([r for r, h in zip(run_ids, holders, strict=True) if h is None])

    # -- leases: one bot process relays each run ----------------------------------------
    async def claim(self, run_id: str, owner: str, ttl_s: float) -> Lock | None:
        """Hold ``run_id`` for ``owner`` for ``ttl_s``; None while another's lease lives."""
        kind = _InProcessLock if self.in_process else Lock
        # Not thread-local: the lease is taken, renewed and released by different tasks.
        name = self.keys.lease(run_id)
        lease = kind(self.redis, name, timeout=ttl_s, blocking=False, thread_local=False)
        return lease if await lease.acquire(token=owner) else None

    async def renew(self, leases: dict[str, Lock]) -> list[str]:
        """Extend each lease (run id → lease) to its full time; the runs whose lease lapsed
        or was taken over. One script call for all (checking the holder, as ``reacquire``)."""
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
        return bool(await lease.owned())

    @staticmethod
    async def release(lease: Lock) -> None:
        """Give the lease up; one that lapsed or was taken over meanwhile is left as is."""
        with contextlib.suppress(LockError):
            await lease.release()


async def _kept(lease: Lock) -> bool:
    try:
        return bool(await lease.reacquire())
    except LockError:  # LockNotOwnedError: lapsed, or another holder has it
        return False


class _InProcessLock(Lock):
    """A lease in fakeredis (embedded mode: one bot process), which runs no Lua scripts."""

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
