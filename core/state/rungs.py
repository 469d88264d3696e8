"""What each model was seen able to do with tools, shared by every process: one hash
(``Keys.llm_rungs``), model name → its rung of the capability ladder
(``core.llm.capabilities``), expiring some time after its last change.

Owns that hash; called by ``core.agent.text_reply``. May call only the Redis client it is
given through the store."""

from __future__ import annotations

from typing import Any

from core.state.store import Store


async def saved_rung(store: Store, model: str) -> str | None:
    """The rung another process saved for ``model``, if any."""
    raw: Any = await store.redis.hget(store.keys.llm_rungs(), model)
    return None if raw is None else str(raw)


async def save_rung(store: Store, model: str, rung: str, ttl_s: int) -> None:
    """Share the model's new rung; the hash is forgotten ``ttl_s`` after the last change."""
    key = store.keys.llm_rungs()
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.hset(key, model, rung)
        pipe.expire(key, ttl_s)
        await pipe.execute()
