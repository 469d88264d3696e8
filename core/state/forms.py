"""Forms MCP servers ask people to fill in (elicitation), while their tool call waits.

One hash per run (``Keys.forms``): form id → the open form (JSON). The call that asked
waits in a worker; the answer comes from a bot process. Answering removes the form and
writes the answer (``Keys.form_answer``) in one script, so exactly one of an answer and
the call's time-out closes a form; the waiting call reads the answer about once a
second. Called by ``core.tools.elicit`` and ``core.runs.people``.
"""

from __future__ import annotations

from typing import Any, Literal

from core.state.store import Store
from core.types._base import Frozen

# Removes the open form and, if it was still open, keeps the answer for the waiting call.
_ANSWER = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
"""
# The answer outlives the waiting call's time-out by this much, then goes.
_ANSWER_TTL_S = 3600


class OpenForm(Frozen):
    """A form waiting for a person: asked by ``server`` through agent ``agent_id``'s
    tool call; ``requested`` (form mode: the schema) or ``url`` (URL mode)."""

    id: str
    run_id: str
    agent_id: str
    server: str
    message: str
    requested: dict[str, Any] | None = None
    url: str | None = None
    asked_at: float
    deadline: float


class FormReply(Frozen):
    """What became of a form: the person's action, the content they gave, who."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    by: str | None = None


async def open_form(store: Store, form: OpenForm) -> None:
    await store.redis.hset(store.keys.forms(form.run_id), form.id, form.model_dump_json())


async def get(store: Store, run_id: str, form_id: str) -> OpenForm | None:
    raw: Any = await store.redis.hget(store.keys.forms(run_id), form_id)
    return None if raw is None else OpenForm.model_validate_json(raw)


async def open_forms(store: Store, run_id: str) -> list[OpenForm]:
    """The run's open forms, oldest first."""
    raw: Any = await store.redis.hgetall(store.keys.forms(run_id))
    return sorted((OpenForm.model_validate_json(v) for v in raw.values()), key=lambda f: f.asked_at)


async def answer(store: Store, run_id: str, form_id: str, reply: FormReply) -> bool:
    """Close the form with ``reply``; False when it was closed already (answered by
    someone else, or its call gave up)."""
    keys = (store.keys.forms(run_id), store.keys.form_answer(run_id, form_id))
    done = await store.redis.eval(
        _ANSWER, 2, *keys, form_id, reply.model_dump_json(), _ANSWER_TTL_S
    )  # type: ignore[misc]
    return bool(done)


async def reply_of(store: Store, run_id: str, form_id: str) -> FormReply | None:
    """The answer, once the form was answered."""
    raw: Any = await store.redis.get(store.keys.form_answer(run_id, form_id))
    return None if raw is None else FormReply.model_validate_json(raw)


async def forget(store: Store, run_id: str, form_id: str) -> None:
    """Drop the answer (the waiting call read it)."""
    await store.redis.delete(store.keys.form_answer(run_id, form_id))
