"""Setting a channel's or a workspace's monthly budget (:func:`set_budget`): admins only
(``[governance] admins``, ``[approval] approvers``, ``Person.approver``), who also name
the budget's owner, the person who approves requests over it. :func:`is_admin` is that
rule; :func:`money` says an amount as people read it.

May call: ``core.state`` (``core.state.spend``, the people's marks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.runs.outcomes import Refused
from core.state import spend as kept
from core.state.people import PeopleMarks
from core.types.people import Person
from core.types.place import Place
from core.types.spend import ChannelBudget

if TYPE_CHECKING:
    from core.services import Services


@dataclass(frozen=True)
class BudgetSet:
    """The budget now in force; ``line``: what to say in the channel."""

    budget: ChannelBudget
    line: str


def is_admin(svc: Services, person: Person) -> bool:
    """Whether ``person`` may set budgets (and decide any over-budget request)."""
    gov, approval = svc.settings.governance, svc.settings.approval
    return person.approver or person.id in gov.admins or person.id in approval.approvers


def money(usd: float) -> str:
    return f"${usd:,.2f}"


async def set_budget(
    svc: Services,
    person: Person,
    place: Place,
    *,
    month_usd: float,
    owner: Person | None = None,
    scope: Literal["channel", "workspace"] = "channel",
) -> BudgetSet | Refused:
    """Give ``place``'s channel (or its workspace) a monthly budget of ``month_usd`` with
    ``owner`` (``person`` when None) approving requests over it; admins only."""
    await PeopleMarks(svc.store).remember(person.id, person.name)
    if not is_admin(svc, person):
        return Refused(
            "Only the admins your admin named ([governance] admins) or the approvers may "
            "set a budget."
        )
    cap = svc.settings.governance.max_month_usd
    if not 0 <= month_usd <= cap:
        return Refused(f"A monthly budget is between $0 and {money(cap)}.")
    owner = owner or person
    key = place.key if scope == "channel" else place.team_key
    name = place.channel_name or place.channel if scope == "channel" else place.workspace_name
    budget = ChannelBudget(
        place_key=key,
        place_name=name or key,
        scope=scope,
        month_usd=month_usd,
        owner_id=owner.id,
        owner_name=owner.name,
        warn_at=svc.settings.governance.warn_at,
    )
    await kept.set_budget(svc.store, budget)
    line = f"{person.name} set {budget.place_name}'s budget to {money(month_usd)} a month"
    return BudgetSet(budget, f"{line}; {owner.name} approves requests over it.")
