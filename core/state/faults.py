"""Counters that arm crash-test fault points (``Keys.fault``; ``core.agent.faults`` says
how a test uses them).

Owns the fault counters; called by ``core.agent.faults``. May call only the Redis client
it is given through the store."""

from __future__ import annotations

from core.state.store import Store


async def spend(store: Store, name: str) -> int:
    """Take one pass of the point ``name``: what is left (below 0: it is not armed)."""
    return int(await store.redis.decr(store.keys.fault(name)))
