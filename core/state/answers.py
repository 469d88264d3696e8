"""Paid answers kept: the model's answers saved in one hash per run (``Keys.responses``),
a turn's under ``<agent>:<seq>`` and a planning call's under ``plan:<digest>``, until the
work that asked for them is saved (``core.agent.responses`` says when and why).

Owns the responses hash (the call keeper's process writes it too, the same way). May call
only the Redis client it is given through the store."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.state.records import parse_head
from core.state.store import Store
from core.state.turns import PipelineWrite
from core.types.run import RunHead


async def keep(store: Store, run_id: str, field: str, answer: str, ttl_s: int) -> None:
    """Save ``answer`` under ``field``; the hash lives ``ttl_s`` after its last save."""
    await _keep(store, run_id, field, answer, ttl_s, read_head=False)


async def keep_and_read_head(
    store: Store, run_id: str, field: str, answer: str, ttl_s: int
) -> RunHead | None:
    """:func:`keep`, and the run's head read in the same round trip (None: no head)."""
    return parse_head(await _keep(store, run_id, field, answer, ttl_s, read_head=True))


async def _keep(
    store: Store, run_id: str, field: str, answer: str, ttl_s: int, *, read_head: bool
) -> Any:
    key = store.keys.responses(run_id)
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.hset(key, field, answer)
        pipe.expire(key, ttl_s)
        if read_head:
            pipe.get(store.keys.run_head(run_id))
        replies = await pipe.execute()
    return replies[2] if read_head else None


async def get(store: Store, run_id: str, field: str) -> str | None:
    raw: Any = await store.redis.hget(store.keys.responses(run_id), field)
    return None if raw is None else str(raw)


def forget_turn_write(store: Store, run_id: str, agent_id: str, seq: int) -> PipelineWrite:
    """Drop a turn's saved answer (in the turn's save transaction: the turn is applied)."""
    key, field = store.keys.responses(run_id), store.keys.response_field(agent_id, seq)
    return lambda pipe: pipe.hdel(key, field)


async def forget(store: Store, run_id: str, fields: Iterable[str]) -> None:
    """Drop saved answers (their work is saved)."""
    names = list(fields)
    if names:
        await store.redis.hdel(store.keys.responses(run_id), *names)
