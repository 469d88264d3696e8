"""The claim a worker holds while it plans a request (``Keys.planning``): set once with a
time to live and renewed while the planning goes on, so two deliveries of the planning
job never plan at once and a dead worker's claim lapses (``core.runs.requests``). Part
of the state room; called by ``core.runs.requests`` only."""

from __future__ import annotations

from core.state.store import Store


async def claim(store: Store, run_id: str, ttl_s: int) -> bool:
    """Claim planning ``run_id`` for ``ttl_s``; False if another worker holds it."""
    return bool(await store.redis.set(store.keys.planning(run_id), "1", nx=True, ex=ttl_s))


async def renew(store: Store, run_id: str, ttl_s: int) -> None:
    """Keep the claim another ``ttl_s``."""
    await store.redis.expire(store.keys.planning(run_id), ttl_s)
