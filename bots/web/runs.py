"""The runs list: the newest runs with their status, who asked (by the name the people
room last saw them under, else their id), where, how long they ran and what they cost."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from bots.chat.store import ChatStore
from core.state.listing import newest_runs
from core.state.people import PeopleMarks
from core.state.store import Store
from core.types.chat import Usage
from core.types.run import RunState, RunStatus


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
    # From its start to its end (to now while it runs); None before it started.
    seconds: float | None = None
    running: bool = False


def ran_for(run: RunState, now: float) -> float | None:
    """How long ``run`` ran, from its history: first started to ended (or ``now``)."""
    started = next((t.at for t in run.history if t.to_status is RunStatus.RUNNING), None)
    if started is None:
        return None
    ended = next((t.at for t in reversed(run.history) if t.to_status.terminal), None)
    return max(0.0, (ended if ended is not None else now) - started)


async def list_runs(store: Store, limit: int, platforms: tuple[str, ...]) -> list[RunRow]:
    """The newest ``limit`` runs, newest first, with where each chat platform in
    ``platforms`` shows it (while it relays it)."""
    runs = await newest_runs(store, limit)
    ids = [run.id for run, _ in runs]
    shown = [await ChatStore.beside(store, p).relays(ids) for p in platforms]
    names = await PeopleMarks(store).names(run.requested_by for run, _ in runs)
    rows = []
    for run, usage in runs:
        planning = run.planning or Usage()
        rows.append(
            RunRow(
                id=run.id,
                task=run.task,
                status=run.status.value,
                requested_by=names.get(run.requested_by, run.requested_by),
                channel=_channel(platforms, [relays.get(run.id) for relays in shown]),
                created_at=run.created_at,
                tokens=usage.total_tokens + planning.total_tokens,
                cost_usd=usage.cost_usd + planning.cost_usd,
                seconds=ran_for(run, time.time()),
                running=not run.status.terminal,
            )
        )
    return rows


def _channel(platforms: tuple[str, ...], shown: list[str | None]) -> str:
    """Where a chat adapter shows the run (while it relays it), as ``slack #C123``."""
    for platform, raw in zip(platforms, shown, strict=True):
        if raw:
            try:
                return f"{platform} {json.loads(raw).get('channel', '')}".strip()
            except ValueError:
                continue
    return ""
