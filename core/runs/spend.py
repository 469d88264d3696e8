"""Team spend in the runs room: the ledger's bookkeeping of a run (:func:`open_run`,
:func:`planned`, :func:`name_place`) and the background loop's fold of ended runs
(:func:`fold_ended`), here; the people's side in its own modules, each with its rule
inside, whose names are importable from here too:

- ``core.runs.spend_report`` — :func:`report`, anybody: a month's spend (by channel,
  workspace, person, model, day) with the budgets that apply and what they hold.
- ``core.runs.spend_budgets`` — :func:`set_budget`, admins only: a channel's or
  workspace's monthly budget and its owner.
- ``core.runs.spend_asks`` — the planning's gate (:func:`gate`) and
  :func:`approve_spend`, the budget's owner or an admin, once per request: a request over
  its budget goes on to planning (approve) or ends with the reason (deny); the warnings.

May call: ``core.spend``, ``core.state`` (``core.state.spend``, the store), the scheduler.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from core.runs.spend_asks import (
    AskEnded,
    approve_spend,
    asked_text,
    gate,
    planning_from,
    waiting,
    warn_after,
    warned_text,
)
from core.runs.spend_budgets import BudgetSet, is_admin, money, set_budget
from core.runs.spend_report import report
from core.spend import ledger
from core.state import spend as kept
from core.types.chat import Usage
from core.types.place import Place
from core.types.run import RunState

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)


async def planned(svc: Services, run_id: str, usage: Usage | None) -> None:
    """What planning ``run_id`` cost, counted against its place's budgets while it runs
    (the run record keeps it too; the ledger folds it from there)."""
    if usage is not None:
        await kept.note_planning(svc.store, run_id, usage.cost_usd)


async def name_place(svc: Services, place: Place) -> None:
    """Keep the names of ``place``'s channel and workspace for reports (an adapter that
    learns them after its runs were recorded)."""
    names = {place.key: place.channel_name, place.team_key: place.workspace_name}
    known = {k: v for k, v in names.items() if v}
    await kept.set_names(svc.store, known, ledger.ttl_s(svc))


async def open_run(svc: Services, run: RunState) -> None:
    """Count ``run`` in the ledger's open runs (its live usage counts against its place's
    budgets until the background loop folds it in, once it ended)."""
    channel, team = ledger.keys_of(run.place)
    await kept.open_run(svc.store, run.id, channel, team)


_folded_at: dict[str, float] = {}


async def _warn_folded(svc: Services, run: RunState, cost_usd: float) -> None:
    """The warning a folded run's cost brings (said in its thread already if its relay
    saw the month past the line at the run's end: the claim is the same)."""
    await warn_after(svc, run, folded_usd=cost_usd)


def fold_due(svc: Services, *, now: float | None = None) -> bool:
    """Whether :func:`fold_ended` would make a pass now (no round trip)."""
    now = time.monotonic() if now is None else now
    last = _folded_at.get(svc.store.keys.prefix, -1e18)
    return now - last >= svc.settings.governance.fold_every_s


async def fold_ended(svc: Services, *, now: float | None = None) -> int:
    """The background loop's pass (``core.spend.ledger.fold_ended``), at most once every
    ``[governance] fold_every_s`` in this process; how many runs were folded."""
    now = time.monotonic() if now is None else now
    if not fold_due(svc, now=now):
        return 0
    _folded_at[svc.store.keys.prefix] = now
    try:
        return await ledger.fold_ended(svc, then=_warn_folded)
    except Exception:
        log.exception("folding ended runs into the spend ledger failed; next pass retries")
        return 0


__all__ = [
    "AskEnded",
    "BudgetSet",
    "approve_spend",
    "asked_text",
    "fold_due",
    "fold_ended",
    "gate",
    "is_admin",
    "money",
    "name_place",
    "open_run",
    "planned",
    "planning_from",
    "report",
    "set_budget",
    "waiting",
    "warn_after",
    "warned_text",
]
