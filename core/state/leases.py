"""The lease on one turn (``Keys.turn_lease``): held, with a time-out, by the one delivery
running turn ``seq`` of an agent (``core.agent.lease`` says why and how long). The turn's
start script takes it (``core.state.turn_start``) and its save script releases it
(``core.state.turn_script``); this module renews it and releases it when the turn ends
without a save.

Owns the lease keys; called by ``core.agent.lease`` and the turns module (the watchdog
reads whether one is held). May call only the Redis client it is given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.state.store import Store

# Delete the lease only while it holds this delivery's token (the check and the delete
# at once): a lease that lapsed and was taken by another delivery stays that one's.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


async def release_lease(redis: Any, key: str, token: str) -> None:
    await redis.eval(_RELEASE, 1, key, token)


class TurnLease:
    """The lease of turn ``seq`` of ``agent_id``, held under ``token``."""

    def __init__(self, store: Store, run_id: str, agent_id: str, seq: int, token: str) -> None:
        self.store = store
        self.key = store.keys.turn_lease(run_id, agent_id, seq)
        self.token = token

    async def renew(self, ms: int) -> None:
        await self.store.redis.pexpire(self.key, ms)

    async def release(self) -> None:
        await release_lease(self.store.redis, self.key, self.token)
