"""The runs list: the newest runs with their status, who asked, where, and what they cost."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.state.store import Store
from core.types.chat import Usage
from core.types.run import RunState


@dataclass
class RunRow:
    id: str
    task: str
    status: str
    requested_by: str
    channel: str
    created_at: float
    tokens: int
    cost_usd: float


async def list_runs(store: Store, limit: int, platforms: tuple[str, ...]) -> list[RunRow]:
    """The newest ``limit`` runs, newest first."""
    ids: Any = await store.redis.zrevrange(store.keys.runs_index(), 0, limit - 1)
    if not ids:
        return []
    async with store.redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.get(store.keys.run(run_id))
            pipe.hgetall(store.keys.run_usage(run_id))
            for platform in platforms:
                pipe.hget(f"{store.keys.prefix}:{platform}:relays", run_id)
        replies: list[Any] = await pipe.execute()
    step = 2 + len(platforms)
    rows = []
    for i in range(len(ids)):
        raw, usage_raw, *shown = replies[i * step : (i + 1) * step]
        if raw is None:
            continue
        run = RunState.model_validate_json(raw)
        usage = _usage(usage_raw)
        planning = run.planning or Usage()
        rows.append(
            RunRow(
                id=run.id,
                task=run.task,
                status=run.status.value,
                requested_by=run.requested_by,
                channel=_channel(platforms, shown),
                created_at=run.created_at,
                tokens=usage.total_tokens + planning.total_tokens,
                cost_usd=usage.cost_usd + planning.cost_usd,
            )
        )
    return rows


def _channel(platforms: tuple[str, ...], shown: list[Any]) -> str:
    """Where a chat adapter shows the run (while it relays it), as ``slack #C123``."""
    for platform, raw in zip(platforms, shown, strict=True):
        if raw:
            try:
                return f"{platform} {json.loads(raw).get('channel', '')}".strip()
            except ValueError:
                continue
    return ""


def _usage(raw: dict[str, str]) -> Usage:
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens", 0) or 0),
        completion_tokens=int(raw.get("completion_tokens", 0) or 0),
        cost_usd=float(raw.get("cost_usd", 0) or 0),
    )
