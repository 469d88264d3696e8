"""Tool calls waiting for a person's approval: one hash per run (``Keys.approvals``).

- ``<id>`` → the request (JSON), written in the asking turn's save;
- ``decision:<id>`` → what was decided (JSON), set once with HSETNX: concurrent clicks
  and an expiry racing them make one decision;
- ``started:<id>`` → set once with HSETNX by the delivery that runs the approved call, so
  a delivery after a crash never runs it again; ``result:<id>`` → what it returned;
- ``grant:<tool>`` → who approved the tool for the whole run.

Owns the approvals hash; called by ``core.agent.approvals``. May call only the Redis
client it is given through the store."""

from __future__ import annotations

from typing import Any

from core.state.durable_writes import replicated
from core.state.store import Store
from core.state.turns import PipelineWrite
from core.types.approvals import ApprovalDecision, ApprovalRequest

_DECISION, _STARTED, _RESULT, _GRANT = "decision:", "started:", "result:", "grant:"
_PARTS = (_DECISION, _STARTED, _RESULT, _GRANT)


def ask_write(store: Store, request: ApprovalRequest) -> PipelineWrite:
    """Keep the request (for the asking turn's save transaction)."""
    key, body = store.keys.approvals(request.run_id), request.model_dump_json()
    return lambda pipe: pipe.hset(key, request.id, body)


async def get(store: Store, run_id: str, approval_id: str) -> ApprovalRequest | None:
    raw: Any = await store.redis.hget(store.keys.approvals(run_id), approval_id)
    return None if raw is None else ApprovalRequest.model_validate_json(raw)


async def decision(store: Store, run_id: str, approval_id: str) -> ApprovalDecision | None:
    raw: Any = await store.redis.hget(store.keys.approvals(run_id), _DECISION + approval_id)
    return None if raw is None else ApprovalDecision.model_validate_json(raw)


async def decide(
    store: Store, run_id: str, request: ApprovalRequest, made: ApprovalDecision
) -> ApprovalDecision | None:
    """Record ``made`` if nobody decided first (and, approved for the run, the tool's
    grant); else return the decision that was made first."""
    key = store.keys.approvals(run_id)
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hsetnx(key, _DECISION + request.id, made.model_dump_json())
        pipe.hget(key, _DECISION + request.id)
        won, raw = await pipe.execute()
    if not won:
        return ApprovalDecision.model_validate_json(raw)
    if made.choice == "run":
        await store.redis.hsetnx(key, _GRANT + request.tool, made.name or made.by)
    # A person's decision: on redis.replicas_to_ack replicas before the agent is woken
    # (a failover must not lose it; nothing sent when 0).
    await replicated(store.redis, store.keys)
    return None


async def granted(store: Store, run_id: str, tool: str) -> bool:
    """Whether someone approved ``tool`` for the whole run."""
    return bool(await store.redis.hexists(store.keys.approvals(run_id), _GRANT + tool))


async def start(store: Store, run_id: str, approval_id: str) -> bool:
    """Claim running the approved call: True once, for the first delivery that asks."""
    key = store.keys.approvals(run_id)
    return bool(await store.redis.hsetnx(key, _STARTED + approval_id, "1"))


async def keep_result(store: Store, run_id: str, approval_id: str, content: str) -> None:
    await store.redis.hset(store.keys.approvals(run_id), _RESULT + approval_id, content)


async def result(store: Store, run_id: str, approval_id: str) -> str | None:
    raw: Any = await store.redis.hget(store.keys.approvals(run_id), _RESULT + approval_id)
    return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)


async def every(store: Store, run_id: str) -> list[tuple[ApprovalRequest, ApprovalDecision | None]]:
    """The run's requests, oldest first, each with its decision (None: still open)."""
    raw: Any = await store.redis.hgetall(store.keys.approvals(run_id))
    fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
    found = []
    for field, value in fields.items():
        if field.startswith(_PARTS):
            continue
        made = fields.get(_DECISION + field)
        found.append(
            (
                ApprovalRequest.model_validate_json(value),
                None if made is None else ApprovalDecision.model_validate_json(made),
            )
        )
    return sorted(found, key=lambda pair: pair[0].asked_at)


async def open_count(store: Store, run_id: str) -> int:
    """How many of the run's requests nobody decided yet."""
    return sum(made is None for _, made in await every(store, run_id))
