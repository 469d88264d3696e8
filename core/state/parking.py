"""Agents parked while their run is paused (``Keys.parked``): a set per run, joined by an
agent's turn that found the run paused at a limit and emptied by the resume that gives
each parked agent its turn again (``core.agent.limits``, ``core.runs.budget``).

Owns the parked set (and drops a parking agent's wake-up claim with it). May call only
the Redis client it is given through the store."""

from __future__ import annotations

from typing import Any

from core.state.store import Store


async def park(store: Store, run_id: str, agent_id: str) -> None:
    """Join the parked set and release the agent's wake-up claim (it was woken to park:
    the resume wakes it again), in one transaction."""
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.sadd(store.keys.parked(run_id), agent_id)
        pipe.delete(store.keys.wake(run_id, agent_id))
        await pipe.execute()


async def unpark(store: Store, run_id: str, agent_id: str) -> None:
    await store.redis.srem(store.keys.parked(run_id), agent_id)


async def parked(store: Store, run_id: str) -> list[str]:
    """The run's parked agents."""
    members: Any = await store.redis.smembers(store.keys.parked(run_id))
    return sorted(members)


async def clear(store: Store, run_id: str) -> None:
    """Forget the run's parked agents (it ended: every agent gets a turn to stop)."""
    await store.redis.delete(store.keys.parked(run_id))
