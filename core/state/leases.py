"""The lease on one turn (``Keys.turn_lease``): held, with a time-out, by the one delivery
running turn ``seq`` of an agent (``core.agent.lease`` says why and how long).

Owns the lease keys; called by ``core.agent.lease`` (the watchdog reads whether one is
held). May call only the Redis client it is given through the store."""

from __future__ import annotations

from core.state.store import Store


class TurnLease:
    """The lease of turn ``seq`` of ``agent_id``, held under ``token`` for ``ms``."""

    def __init__(self, store: Store, run_id: str, agent_id: str, seq: int, token: str) -> None:
        self.store = store
        self.key = store.keys.turn_lease(run_id, agent_id, seq)
        self.token = token

    async def take(self, ms: int) -> bool:
        """Take the lease for ``ms`` if nobody holds it; True if taken."""
        return bool(await self.store.redis.set(self.key, self.token, nx=True, px=ms))

    async def renew(self, ms: int) -> None:
        await self.store.redis.pexpire(self.key, ms)

    async def release(self) -> None:
        await self.store.redis.delete(self.key)
