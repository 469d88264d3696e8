"""Open questions agents asked people: one hash per run (``Keys.questions``), question id
→ the question (JSON), written in the asking turn's save and removed once answered or
timed out. HDEL is the claim: an answer and a time-out racing close a question once.

Owns the questions hash; called by ``core.agent.questions`` (and whoever counts a run's
open questions). May call only the Redis client it is given through the store."""

from __future__ import annotations

from typing import Any

from core.state.store import Store
from core.state.turns import PipelineWrite
from core.types._base import Frozen


class OpenQuestion(Frozen):
    id: str
    run_id: str
    agent_id: str
    question: str
    asked_at: float
    deadline: float


def ask_write(store: Store, q: OpenQuestion) -> PipelineWrite:
    """Keep the question (for the asking turn's save transaction)."""
    key, body = store.keys.questions(q.run_id), q.model_dump_json()
    return lambda pipe: pipe.hset(key, q.id, body)


async def open_questions(store: Store, run_id: str) -> list[OpenQuestion]:
    """The run's open questions, oldest first."""
    raw: Any = await store.redis.hgetall(store.keys.questions(run_id))
    found = [OpenQuestion.model_validate_json(v) for v in raw.values()]
    return sorted(found, key=lambda q: q.asked_at)


async def get(store: Store, run_id: str, qid: str) -> OpenQuestion | None:
    raw: Any = await store.redis.hget(store.keys.questions(run_id), qid)
    return None if raw is None else OpenQuestion.model_validate_json(raw)


async def claim(store: Store, run_id: str, qid: str) -> OpenQuestion | None:
    """Remove the question and return it, or None when another caller claimed it first."""
    key = store.keys.questions(run_id)
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hget(key, qid)
        pipe.hdel(key, qid)
        raw, removed = await pipe.execute()
    return OpenQuestion.model_validate_json(raw) if removed and raw else None


async def count(store: Store, run_id: str) -> int:
    """How many questions of the run are open."""
    return int(await store.redis.hlen(store.keys.questions(run_id)))
