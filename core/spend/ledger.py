"""Attribution: what a run cost, by model, counted to its channel, workspace and
requester in the UTC month it ended (:func:`rows_of`), folded into the ledger once by
the background loop (:func:`fold_ended`), and a month's report (:func:`month_report`).

A run's cost is its model calls' (the usage counter every turn already adds to — no
extra Redis write on a turn), its planning's (``RunState.planning``) and its image
calls' (``core.tools.images``). Per model: each agent's usage goes to its model; what
the counter holds beyond the agents' sum (an agent whose state was not saved) is
counted as ``other`` so the rows always sum to the run's cost."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from core.errors import RunError
from core.state import listing
from core.state import spend as ledger
from core.state.people import PeopleMarks
from core.types.place import Place
from core.types.run import RunState
from core.types.spend import UNPLACED, SpendReport, SpendRow, SpendTotal

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)
PLANNING = "planning"
OTHER = "other"
_EPSILON = 1e-9
_MONTH_S = 31 * 86_400


def month_of(at: float) -> str:
    """The UTC month of the unix time ``at``: ``2026-11``."""
    return time.strftime("%Y-%m", time.gmtime(at))


def day_of(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def ttl_s(svc: Services) -> int:
    """How long a month's keys live after their last write ([governance] months_kept)."""
    return (svc.settings.governance.months_kept + 1) * _MONTH_S


def keys_of(place: Place | None) -> tuple[str, str]:
    """The channel key and workspace key of ``place`` (``unplaced`` without one)."""
    return (place.key, place.team_key) if place is not None else (UNPLACED, UNPLACED)


def ended_at(run: RunState) -> float:
    """When the run ended (its last transition), else when it was recorded."""
    return run.history[-1].at if run.history else run.created_at


async def by_model(svc: Services, run: RunState) -> dict[str, float]:
    """What ``run`` cost per model (planning and image calls included)."""
    costs: dict[str, float] = defaultdict(float)
    for model, usd in await listing.run_agent_costs(svc.store, run.id):
        if usd:
            costs[model or svc.settings.llm.model] += usd
    counted = (await svc.store.run_usage(run.id)).cost_usd
    rest = counted - sum(costs.values())
    if rest > _EPSILON:
        costs[OTHER] += rest
    if run.planning is not None and run.planning.cost_usd:
        costs[PLANNING] += run.planning.cost_usd
    for model, usd in (await ledger.image_costs(svc.store, run.id)).items():
        costs[model] += usd
    return {model: usd for model, usd in costs.items() if usd > 0}


async def run_cost(svc: Services, run: RunState) -> float:
    """The run's whole cost: what the ledger counts for it."""
    return sum((await by_model(svc, run)).values())


async def rows_of(svc: Services, run: RunState, requester_name: str = "") -> list[SpendRow]:
    """The run's rows: one per model, in the month and day it ended."""
    channel, team = keys_of(run.place)
    at = ended_at(run)
    place = run.place
    return [
        SpendRow(
            month=month_of(at),
            day=day_of(at),
            run_id=run.id,
            channel_key=channel,
            channel_name=place.channel_name or place.channel if place else UNPLACED,
            team_key=team,
            team_name=place.workspace_name or place.workspace if place else UNPLACED,
            requester_id=run.requested_by,
            requester_name=requester_name or run.requested_by,
            model=model,
            cost_usd=usd,
        )
        for model, usd in sorted((await by_model(svc, run)).items())
    ]


async def fold_run(svc: Services, run: RunState) -> bool:
    """Fold an ended run into its month once; False if counted already."""
    return await folded_cost(svc, run) is not None


async def folded_cost(svc: Services, run: RunState) -> float | None:
    """Fold an ended run into its month once: what it cost; None if counted already."""
    known = await PeopleMarks(svc.store).names([run.requested_by])
    rows = await rows_of(svc, run, known.get(run.requested_by, ""))
    channel, team = keys_of(run.place)
    names = {run.requested_by: known.get(run.requested_by, "")}
    if rows:
        names |= {channel: rows[0].channel_name, team: rows[0].team_name}
    month = month_of(ended_at(run))
    if not await ledger.fold(svc.store, run.id, month, rows, names, ttl_s(svc)):
        return None
    return sum(r.cost_usd for r in rows)


async def fold_ended(
    svc: Services, *, then: Callable[[Services, RunState, float], Awaitable[None]] | None = None
) -> int:
    """The background loop's pass: fold every open run that has ended (at most
    ``[governance] fold_batch``); how many were folded now. ``then``: called with each
    run this pass folded and its cost (its failure is logged, the fold stands)."""
    open_ = await ledger.open_runs(svc.store)
    ended = await ledger.ended_among(svc.store, open_)
    runs: list[RunState] = []
    for run_id in ended[: svc.settings.governance.fold_batch]:
        try:
            run = await svc.store.get_run(run_id)
        except RunError:
            await ledger.drop_open(svc.store, run_id)
            continue
        except Exception:
            log.exception("reading run %s to fold its cost failed", run_id)
            continue
        if run.status.terminal:
            runs.append(run)
    # In the order they ended: the run whose cost took a month past a line is the one
    # told (``then``).
    runs.sort(key=ended_at)
    folded = 0
    for run in runs:
        cost = await folded_cost(svc, run)
        if cost is not None:
            folded += 1
            if then is not None:
                try:
                    await then(svc, run, cost)
                except Exception:
                    log.exception("after folding run %s", run.id)
    return folded


def _ranked(totals: dict[str, float], names: dict[str, str]) -> tuple[SpendTotal, ...]:
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(SpendTotal(key=k, name=names.get(k) or k, cost_usd=v) for k, v in ordered)


async def month_report(
    svc: Services, month: str, *, team_key: str | None = None, channel_key: str | None = None
) -> SpendReport:
    """``month``'s spend, narrowed to a workspace or channel when given; totals are
    summed from the rows (the report's figures add up exactly)."""
    rows = await ledger.month_rows(svc.store, month)
    if team_key:
        rows = [r for r in rows if r.team_key == team_key]
    if channel_key:
        rows = [r for r in rows if r.channel_key == channel_key]
    rows.sort(key=lambda r: (r.day, r.run_id, r.model))
    sums: dict[str, dict[str, float]] = {b: defaultdict(float) for b in ledger.BY}
    names: dict[str, str] = {}
    for r in rows:
        for by, key in zip(
            ledger.BY, (r.channel_key, r.team_key, r.requester_id, r.model, r.day), strict=True
        ):
            sums[by][key] += r.cost_usd
        names |= {r.channel_key: r.channel_name, r.team_key: r.team_name}
        names[r.requester_id] = r.requester_name
    names |= await ledger.names(svc.store)
    days = tuple(SpendTotal(key=d, name=d, cost_usd=v) for d, v in sorted(sums["day"].items()))
    cap = svc.settings.governance.report_rows_max
    return SpendReport(
        month=month,
        team_key=team_key,
        channel_key=channel_key,
        total_usd=sum(r.cost_usd for r in rows),
        runs=len({r.run_id for r in rows}),
        by_channel=_ranked(sums["channel"], names),
        by_team=_ranked(sums["team"], names),
        by_person=_ranked(sums["person"], names),
        by_model=_ranked(sums["model"], {}),
        by_day=days,
        rows=tuple(rows[:cap]),
        rows_left_out=max(0, len(rows) - cap),
    )
