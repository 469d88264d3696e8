"""A month's team spend for anybody who asks (:func:`report`): by channel, workspace,
person, model and day, narrowed to a workspace or a channel, with the budgets that apply,
what they hold, and what runs under way spent. Read by the CLI, the web page and the
chat commands (through ``core.runs.spend``).

May call: ``core.spend``, ``core.state`` (``core.state.spend``)."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from core.spend import budgets, ledger
from core.state import spend as kept
from core.types.spend import MONTH_PATTERN, BudgetUse, SpendReport

if TYPE_CHECKING:
    from core.services import Services

_MONTH = re.compile(MONTH_PATTERN)


async def report(
    svc: Services,
    *,
    month: str | None = None,
    team_key: str | None = None,
    channel_key: str | None = None,
) -> SpendReport:
    """``month``'s spend (the current UTC month by default), narrowed to a workspace or a
    channel when given, with the budgets that apply and what runs under way spent."""
    month = month or ledger.month_of(time.time())
    if not _MONTH.match(month):
        raise ValueError(f"month {month!r} is not like 2026-11")
    made = await ledger.month_report(svc, month, team_key=team_key, channel_key=channel_key)
    uses = []
    for budget in await budgets.all_budgets(svc):
        if channel_key and budget.place_key not in (channel_key, _team(channel_key)):
            continue
        if team_key and budget.place_key != team_key and _team(budget.place_key) != team_key:
            continue
        uses.append(BudgetUse(budget=budget, spent_usd=await budgets.spent(svc, budget, month)))
    open_ = await kept.open_runs(svc.store)
    mine = [
        r
        for r, (channel, team) in open_.items()
        if (not channel_key or channel == channel_key) and (not team_key or team == team_key)
    ]
    under_way = 0.0
    if month == ledger.month_of(time.time()):
        under_way = sum((await kept.live_costs(svc.store, mine)).values())
    return made.model_copy(update={"budgets": tuple(uses), "under_way_usd": under_way})


def _team(channel_key: str) -> str:
    return channel_key.rsplit(":", 1)[0]
