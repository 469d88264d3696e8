"""Budgets: the monthly budget of a channel and of its workspace (``[governance]``
channels/workspaces, or set from chat — kept in Redis, winning over config), what their
month holds so far (folded runs plus the live usage of runs not folded yet), and the
check made before a request is planned (:func:`check`): over a budget → ask its owner;
at ``warn_at`` of it → a warning."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from core.config_governance import BudgetRule
from core.spend.ledger import keys_of, month_of
from core.state import spend as ledger
from core.types._base import Frozen
from core.types.place import Place
from core.types.spend import BudgetUse, ChannelBudget

if TYPE_CHECKING:
    from core.services import Services


class Ask(Frozen):
    """The over-budget ask a request waits on: the budget, its month and its use then."""

    run_id: str
    use: BudgetUse
    month: str
    asked_at: float


class Verdict(Frozen):
    """What the check found: ``over`` (the first budget the request would go over), and
    the budgets now at their warning line."""

    over: BudgetUse | None = None
    warn: tuple[BudgetUse, ...] = ()


async def budgets_of(svc: Services, place: Place) -> list[ChannelBudget]:
    """The channel's budget and its workspace's, those that exist (channel first)."""
    gov = svc.settings.governance
    kept = await ledger.budgets(svc.store)
    found: list[ChannelBudget] = []
    for key, scope, rules, name in (
        (place.key, "channel", gov.channels, place.channel_name or place.channel),
        (place.team_key, "workspace", gov.workspaces, place.workspace_name or place.workspace),
    ):
        if key in kept:
            found.append(kept[key])
        elif key in rules:
            found.append(_configured(key, rules[key], scope, name, gov.warn_at))
    return found


def _configured(key: str, rule: BudgetRule, scope: str, name: str, warn_at: float) -> ChannelBudget:
    """The budget ``[governance]`` gives ``key`` (``name`` unless the rule names it)."""
    return ChannelBudget(
        place_key=key,
        place_name=rule.name or name,
        scope="channel" if scope == "channel" else "workspace",
        month_usd=rule.month_usd,
        owner_id=rule.owner,
        owner_name=rule.owner_name,
        warn_at=warn_at,
    )


async def all_budgets(svc: Services) -> list[ChannelBudget]:
    """Every budget, config's and chat's (chat's win), for reports."""
    gov = svc.settings.governance
    kept = await ledger.budgets(svc.store)
    found = dict(kept)
    for scope, rules in (("channel", gov.channels), ("workspace", gov.workspaces)):
        for key, rule in rules.items():
            found.setdefault(key, _configured(key, rule, scope, key, gov.warn_at))
    return sorted(found.values(), key=lambda b: (b.scope, b.place_key))


async def spent(svc: Services, budget: ChannelBudget, month: str) -> float:
    """What ``budget``'s place spent in ``month``: folded runs, plus the runs not folded
    yet (counted in the current month: they are under way or just ended)."""
    by: Literal["channel", "team"] = "channel" if budget.scope == "channel" else "team"
    folded, open_ = await ledger.folded_and_open(svc.store, month, by, budget.place_key)
    if month != month_of(time.time()):
        return folded
    mine = [r for r, (channel, team) in open_.items() if budget.place_key in (channel, team)]
    return folded + sum((await ledger.live_costs(svc.store, mine)).values())


async def check(svc: Services, place: Place) -> Verdict:
    """Whether a new request in ``place`` would go over a budget this month
    (``[governance] request_estimate_usd`` assumed for it), and which budgets are at
    their warning line."""
    month = month_of(time.time())
    estimate = svc.settings.governance.request_estimate_usd
    warn: list[BudgetUse] = []
    for budget in await budgets_of(svc, place):
        use = BudgetUse(budget=budget, spent_usd=await spent(svc, budget, month))
        # At or past the month's budget, or past it once this request is counted.
        if use.spent_usd >= budget.month_usd or use.spent_usd + estimate > budget.month_usd:
            return Verdict(over=use, warn=tuple(warn))
        if use.share >= budget.warn_at:
            warn.append(use)
    return Verdict(warn=tuple(warn))


__all__ = ["Ask", "Verdict", "all_budgets", "budgets_of", "check", "keys_of", "spent"]
