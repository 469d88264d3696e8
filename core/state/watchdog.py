"""What the run watchdog (``core.runs.watchdog``) reads and marks: its claim on a round,
the set of runs under way, its idle marks, the leases and questions it looks at, and its
at-most-once marks for turns and plannings it submits again.

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client and ``core.state.keys``/``records``. The store holds one as
``store.watchdog``."""

from __future__ import annotations

import json
import time
from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys
from core.state.records import parse_head
from core.types.run import RunHead


class WatchdogState:
    """The watchdog's view of the runs under way, on the store's Redis client and keys."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        # Until then (monotonic) this process's own claim holds the round: a claim asked
        # for meanwhile is refused without a round trip (Redis would refuse it too, as the
        # key lives at least as long: its time-out started after this clock was read).
        self._held_until = 0.0

    async def claim_round(self, ttl_ms: int) -> bool:
        """True for the one process that checks the runs this round."""
        now = time.monotonic()
        if now < self._held_until:
            return False
        claimed = bool(await self.redis.set(self.keys.watchdog(), "1", nx=True, px=ttl_ms))
        if claimed:
            self._held_until = now + ttl_ms / 1000
        return claimed

    async def active_runs(self, count: int) -> list[str]:
        """Up to ``count`` runs under way, at random."""
        found: Any = await self.redis.srandmember(self.keys.active_runs(), count)
        return list(found or ())

    async def forget(self, run_id: str) -> None:
        """Drop an ended run from the runs under way and from the idle marks."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.srem(self.keys.active_runs(), run_id)
            pipe.hdel(self.keys.watchdog_marks(), run_id)
            await pipe.execute()

    async def clear_idle(self, run_id: str) -> None:
        await self.redis.hdel(self.keys.watchdog_marks(), run_id)

    async def idle_again(self, run_id: str) -> bool:
        """True when the run was found idle last round with no event since (its mark is
        then cleared); else mark it idle as of its newest event and say False."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xrevrange(self.keys.events(run_id), count=1)
            pipe.hget(self.keys.watchdog_marks(), run_id)
            last, seen = await pipe.execute()
        mark = last[0][0] if last else "0-0"
        if seen != mark:
            await self.redis.hset(self.keys.watchdog_marks(), run_id, mark)
            return False
        await self.redis.hdel(self.keys.watchdog_marks(), run_id)
        return True

    async def agent_rows(self, run_id: str, agent_ids: list[str]) -> list[list[Any]]:
        """Each agent's ``[status, spec JSON, seq]`` (``[None, …]`` for one that is gone),
        in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for agent_id in agent_ids:
                pipe.hmget(self.keys.agent(run_id, agent_id), ["status", "spec", "seq"])
            rows: list[Any] = await pipe.execute()
        return rows

    async def has_questions(self, run_id: str) -> bool:
        """True when an agent of the run waits for a person's answer."""
        return bool(await self.redis.hlen(self.keys.questions(run_id)))

    async def has_timer(self, run_id: str) -> bool:
        """True when a timer that wakes one of the run's agents (a reminder, a time-out)
        is kept for it. A proposal's expiry wakes nobody: one a lossy failover brought back
        (its removal after the approval lost) must not keep a run with nothing left to
        move it ``running`` until the proposal would have expired (``approval.expire_s``)."""
        pattern = f'*"run_id":"{run_id}"*'
        async for timer in self.redis.zscan_iter(self.keys.timers(), match=pattern, count=1000):
            raw = timer[0] if isinstance(timer, tuple) else timer
            if json.loads(raw).get("agent_id"):
                return True
        return False

    async def quiet_ms(self, run_id: str) -> int:
        """How long since the run's newest event, by Redis's clock (event ids carry it:
        compare them with Redis's, not this host's); one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xrevrange(self.keys.events(run_id), count=1)
            pipe.time()
            last, (seconds, micros) = await pipe.execute()
        newest = int(str(last[0][0]).split("-")[0]) if last else 0
        return int(seconds) * 1000 + int(micros) // 1000 - newest

    async def leases_held(self, run_id: str, turns: list[tuple[str, int]]) -> list[bool]:
        """For each ``(agent id, seq)``: is a delivery running that turn (its lease)?"""
        async with self.redis.pipeline(transaction=False) as pipe:
            for agent_id, seq in turns:
                pipe.exists(self.keys.turn_lease(run_id, agent_id, seq))
            held: list[Any] = await pipe.execute()
        return [bool(h) for h in held]

    async def mark_resubmitted(self, run_id: str, what: str, value: str, span_ms: int) -> bool:
        """Claim resubmitting ``what`` (an agent id, or ``plan``) for ``span_ms``; False
        when it was resubmitted within that span already."""
        mark = self.keys.watchdog_resubmitted(run_id, what)
        return bool(await self.redis.set(mark, value, nx=True, px=span_ms))

    async def planning_runs(
        self, since: float, until: float, count: int
    ) -> list[tuple[str, RunHead | None, bool]]:
        """Runs created between ``since`` and ``until`` (up to ``count``), each with its
        head and whether a worker holds its planning claim."""
        recent: Any = await self.redis.zrangebyscore(
            self.keys.runs_index(), since, until, start=0, num=count
        )
        if not recent:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for run_id in recent:
                pipe.get(self.keys.run_head(run_id))
                pipe.exists(self.keys.planning(run_id))
            found: list[Any] = await pipe.execute()
        return [
            (run_id, parse_head(raw), bool(claimed))
            for run_id, raw, claimed in zip(recent, found[::2], found[1::2], strict=True)
        ]
