"""What the App Home and the assistant pane show of a deployment, read from what the
state already holds: the newest runs (``core.state.listing``), the cohorts saved in the
library (its entries' hashes, ``core.state.library_store``: no embedder is loaded) and
what the runs started this month spent."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from core.services import Services
from core.state.library_store import LibraryStore
from core.state.listing import newest_runs
from core.types.run import RunState

# How many runs are read for the month's spend (the newest first).
SPEND_RUNS = 500
# How many library entries are looked at for saved cohorts.
LIBRARY_SCAN = 200


@dataclass(frozen=True)
class RunLine:
    """One run as listed: its task, status, who asked, when, tokens and cost."""

    run_id: str
    task: str
    status: str
    requested_by: str
    created_at: float
    tokens: int
    cost_usd: float


@dataclass(frozen=True)
class SavedCohort:
    """A cohort kept in the library: its name (or task) and the task it was made for."""

    name: str
    task: str
    runs: int = 0


@dataclass(frozen=True)
class Spend:
    """What the runs started since ``since`` spent (tokens, US dollars) over ``runs``."""

    since: float
    runs: int
    tokens: int
    cost_usd: float


def month_start(now: float | None = None) -> float:
    day = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return day.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


async def recent_runs(svc: Services, limit: int, user: str | None = None) -> list[RunLine]:
    """The newest ``limit`` runs (asked by ``user`` only, when given)."""
    pairs = await newest_runs(svc.store, limit if user is None else limit * 10)
    lines = [_line(run, used.total_tokens, used.cost_usd) for run, used in pairs]
    mine = [r for r in lines if user is None or r.requested_by == user]
    return mine[:limit]


def _line(run: RunState, tokens: int, cost_usd: float) -> RunLine:
    return RunLine(
        run.id, run.task, run.status.value, run.requested_by, run.created_at, tokens, cost_usd
    )


async def month_spend(svc: Services, now: float | None = None) -> Spend:
    """Tokens and cost of the runs started this month (UTC)."""
    since = month_start(now)
    pairs = await newest_runs(svc.store, SPEND_RUNS)
    month = [used for run, used in pairs if run.created_at >= since]
    tokens = sum(u.total_tokens for u in month)
    return Spend(since, len(month), tokens, sum(u.cost_usd for u in month))


async def saved_cohorts(svc: Services, limit: int) -> list[SavedCohort]:
    """Cohorts in the library, the most used first (then the newest)."""
    store = LibraryStore.reading(svc, svc.settings.redis.key_prefix)
    ids: list[str] = []
    async for entry_id in store.entry_ids(LIBRARY_SCAN):
        ids.append(entry_id)
        if len(ids) >= LIBRARY_SCAN:
            break
    found: list[tuple[int, float, SavedCohort]] = []
    for row in (await store.rows(ids)).values():
        if row.get("kind") != "cohort":
            continue
        try:
            task = str(json.loads(row.get("payload") or "{}").get("task") or "")
        except ValueError:
            continue
        runs = int(float(row.get("runs") or 0))
        cohort = SavedCohort(row.get("name") or task, task, runs)
        found.append((runs, float(row.get("created_at") or 0), cohort))
    found.sort(key=lambda f: (f[0], f[1]), reverse=True)
    return [c for _, _, c in found if c.task][:limit]
