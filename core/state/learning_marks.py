"""What learning from runs (``core.runs.learning``) keeps in Redis: the runs that ended
and wait to be recorded in the library (a set), who claimed recording each (a hash: run
→ when) and the mark that a run is recorded (the library agents a run counted for are
the library's: ``core.state.library_store``). Keys are named in ``core.state.keys``; a
write to two keys is one transaction or one script. Called by ``core.runs.learning``
only."""

from __future__ import annotations

import time
from typing import Any

from core.state.keys import Keys
from core.state.store import Store

# A claim given back to the waiting set only if it is still there (the run was not
# recorded meanwhile): KEYS the claims hash and the ended set, ARGV the run id.
_REQUEUE = """
if redis.call('hdel', KEYS[1], ARGV[1]) == 1 then
  redis.call('sadd', KEYS[2], ARGV[1])
  return 1
end
return 0
"""


class LearningMarks:
    """The learning marks, in the Redis of the core ``store``."""

    def __init__(self, store: Store) -> None:
        self.redis: Any = store.redis
        self.keys: Keys = store.keys

    async def waiting(self, run_id: str) -> bool:
        """Whether the run ended and nobody recorded it yet."""
        return bool(await self.redis.sismember(self.keys.ended_runs(), run_id))

    async def some_waiting(self, count: int) -> list[str]:
        """Up to ``count`` runs waiting to be recorded, picked at random."""
        found: Any = await self.redis.srandmember(self.keys.ended_runs(), count)
        return list(found or ())

    async def claim(self, run_id: str) -> bool:
        """Claim recording the run (False: another process holds the claim)."""
        claims = self.keys.learning_claims()
        return bool(await self.redis.hsetnx(claims, run_id, str(time.time())))

    async def take(self, run_id: str) -> bool:
        """Take the run out of the waiting set (False: it was not waiting)."""
        return bool(await self.redis.srem(self.keys.ended_runs(), run_id))

    async def unclaim(self, run_id: str) -> None:
        await self.redis.hdel(self.keys.learning_claims(), run_id)

    async def recorded(self, run_id: str) -> bool:
        return bool(await self.redis.exists(self.keys.learned(run_id)))

    async def put_back(self, run_id: str) -> None:
        """Recording failed: the run waits again and the claim goes, in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.sadd(self.keys.ended_runs(), run_id)
            pipe.hdel(self.keys.learning_claims(), run_id)
            await pipe.execute()

    async def done(self, run_id: str, ttl_s: float) -> None:
        """The run is recorded (kept ``ttl_s``) and its claim goes, in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.learned(run_id), "1", ex=int(ttl_s))
            pipe.hdel(self.keys.learning_claims(), run_id)
            await pipe.execute()

    async def claims(self) -> dict[str, float]:
        """Every claim: run → when it was made."""
        raw: Any = await self.redis.hgetall(self.keys.learning_claims())
        return {run_id: float(at) for run_id, at in raw.items()}

    async def requeue(self, run_id: str) -> bool:
        """Give a stale claim's run back to the waiting set, unless its claim went."""
        keys = [self.keys.learning_claims(), self.keys.ended_runs()]
        return bool(await self.redis.eval(_REQUEUE, 2, *keys, run_id))
