"""Where an agent's saved state is read from: its key of its own (``Keys.agent_state``,
written by the save script from the staged SET, ``core.state.staged``), or, for an agent
not saved since the state had that key, the ``state`` field of the agent's hash (its next
save moves it). Every reader outside the turn scripts goes through here (the start
script, ``core.state.turn_start``, has the same fallback in Lua).

Part of the state room (``core.state``); calls Redis only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from core.state.keys import LEGACY_STATE_FIELD, Keys


async def saved_states(
    redis: Redis, keys: Keys, run_id: str, agent_ids: Sequence[str]
) -> list[str | None]:
    """The saved state (JSON) of each of ``agent_ids``, in order (None: none saved), in
    one round trip."""
    async with redis.pipeline(transaction=False) as pipe:
        for agent_id in agent_ids:
            pipe.get(keys.agent_state(run_id, agent_id))
            pipe.hget(keys.agent(run_id, agent_id), LEGACY_STATE_FIELD)
        replies: list[Any] = list(await pipe.execute())
    pairs = zip(replies[::2], replies[1::2], strict=True)
    return [state if state is not None else legacy for state, legacy in pairs]
