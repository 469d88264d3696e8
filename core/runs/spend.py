"""The people's side of team spend, one function each with its rule inside:

- :func:`report` — anybody: a month's spend (by channel, workspace, person, model, day)
  with the budgets that apply and what they hold.
- :func:`set_budget` — admins only (``[governance] admins``, ``[approval] approvers``,
  ``Person.approver``): a channel's or workspace's monthly budget and its owner.
- :func:`approve_spend` — the budget's owner or an admin, once per request: a request
  over its budget goes on to planning (approve) or ends with the reason (deny).

And the planning's gate (:func:`gate`, called by ``core.runs.requests`` before a request
is planned): a request that would take its channel's (or workspace's) month over its
budget waits — durably: the ask is kept in Redis and the run stays in ``planning`` with
no worker held — for its owner in the thread (a ``SpendApprovalAsked`` event); a month at
``warn_at`` of its budget is said once (``SpendWarned``).

May call: ``core.spend``, ``core.state`` (``core.state.spend``, the store), the scheduler.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.errors import RunError
from core.runs.outcomes import Done, Refused, Said
from core.scheduler.base import TurnJob
from core.spend import budgets, ledger
from core.state import spend as kept
from core.state.people import PeopleMarks
from core.state.store import transition
from core.types.chat import Usage
from core.types.events import (
    RunEvent,
    RunFinished,
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
)
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunState, RunStatus
from core.types.spend import MONTH_PATTERN, BudgetUse, ChannelBudget, SpendReport

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)
# How long an approval to go over budget lets the request's planning go on.
_PASS_S = 86_400
_MONTH = re.compile(MONTH_PATTERN)


@dataclass(frozen=True)
class AskEnded(Refused):
    """A click on an ask whose run ended before anybody decided (cancelled, given up):
    ``reason`` says so, for the ask's message too (its buttons are dead)."""


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


async def gate(svc: Services, run: RunState) -> bool:
    """Whether ``run``'s planning may start now. False when the request would take its
    place's month over a budget: the ask is kept and said in the thread, the run waits in
    ``planning`` for :func:`approve_spend`. Warnings are said once per place and month."""
    if not svc.settings.governance.enabled or run.place is None:
        return True
    if await kept.passed_at(svc.store, run.id) is not None:
        return True
    if await kept.get_ask(svc.store, run.id) is not None:  # asked already (a re-delivery)
        await kept.release_planning(svc.store, run.id)
        return False
    found = await budgets.check(svc, run.place)
    month = ledger.month_of(time.time())
    for use in found.warn:
        if await kept.warn_in(svc.store, month, use.budget.place_key, run.id, ledger.ttl_s(svc)):
            await svc.store.emit(_warned(run.id, use, month))
    if found.over is None:
        return True
    use = found.over
    ask = budgets.Ask(run_id=run.id, use=use, month=month, asked_at=time.time())
    await kept.put_ask(svc.store, run.id, ask.model_dump_json())
    await kept.release_planning(svc.store, run.id)
    b = use.budget
    await svc.store.emit(
        SpendApprovalAsked(
            run_id=run.id,
            place_name=b.place_name,
            scope=b.scope,
            month=month,
            spent_usd=use.spent_usd,
            month_usd=b.month_usd,
            owner_id=b.owner_id,
            owner_name=b.owner_name,
        )
    )
    return False


async def warn_after(
    svc: Services, run: RunState, *, folded_usd: float | None = None
) -> list[SpendWarned]:
    """The warnings ``run``'s end brings: each budget of its place at ``warn_at`` of its
    month or past, if no other run was warned about it this month — said in ``run``'s
    thread (the relay shows what this returns, at the run's end: the month counts the
    runs under way) and on its events once (for the inspector, and a run no relay
    follows). ``folded_usd``: the run was just folded at that cost — warned only if its
    fold took the month's folded total past the line. The relay's and the fold's asks
    share one claim: the same run asking twice is answered twice."""
    if not svc.settings.governance.enabled or run.place is None:
        return []
    month = ledger.month_of(time.time() if folded_usd is None else ledger.ended_at(run))
    said: list[SpendWarned] = []
    for budget in await budgets.budgets_of(svc, run.place):
        line = budget.warn_at * budget.month_usd
        if folded_usd is None:
            spent = await budgets.spent(svc, budget, month)
            crossed = spent >= line
        else:
            by: Literal["channel", "team"] = "channel" if budget.scope == "channel" else "team"
            spent, _ = await kept.folded_and_open(svc.store, month, by, budget.place_key)
            crossed = spent - folded_usd < line <= spent
        if not crossed:
            continue
        use = BudgetUse(budget=budget, spent_usd=spent)
        if await kept.warn_in(svc.store, month, budget.place_key, run.id, ledger.ttl_s(svc)):
            said.append(_warned(run.id, use, month))
    if said:
        # On the run's events once (its relay and its fold both ask).
        shown = {
            (e.place_name, e.month)
            for _, e in await svc.store.read_events(run.id)
            if isinstance(e, SpendWarned)
        }
        for event in said:
            if (event.place_name, event.month) not in shown:
                await svc.store.emit(event)
    return said


def _warned(run_id: str, use: BudgetUse, month: str) -> SpendWarned:
    b = use.budget
    return SpendWarned(
        run_id=run_id,
        place_name=b.place_name,
        scope=b.scope,
        month=month,
        spent_usd=use.spent_usd,
        month_usd=b.month_usd,
    )


async def waiting(svc: Services, run_id: str) -> budgets.Ask | None:
    """The over-budget ask ``run_id`` waits on, if any."""
    raw = await kept.get_ask(svc.store, run_id)
    return None if raw is None else budgets.Ask.model_validate_json(raw)


def asked_text(event: SpendApprovalAsked) -> str:
    """The ask in plain words (not escaped): whose budget, how much, who decides."""
    owner = event.owner_name or "an admin"
    return (
        f"💸 This request would take {event.place_name} over its {event.scope} budget for "
        f"{event.month}: {money(event.spent_usd)} spent of {money(event.month_usd)}. "
        f"It waits for {owner} (the budget's owner) or an admin to approve it."
    )


def warned_text(event: SpendWarned) -> str:
    share = event.spent_usd / event.month_usd if event.month_usd else 1.0
    return (
        f"⚠️ {event.place_name} has spent {money(event.spent_usd)} of its "
        f"{money(event.month_usd)} {event.scope} budget for {event.month} ({share:.0%})."
    )


async def approve_spend(
    svc: Services, run_id: str, person: Person, approve: bool
) -> Done | Refused:
    """The budget's owner (or an admin) lets the request over budget be planned, or ends
    it with the reason; once per request (a second click is told who decided)."""
    await PeopleMarks(svc.store).remember(person.id, person.name)
    ask = await waiting(svc, run_id)
    if ask is None:  # decided already, ended, never asked, or no such run (a forged click)
        return await _not_waiting(svc, run_id)
    run = await svc.store.get_run(run_id)
    if run.status.terminal:  # cancelled while it waited (its ask goes when it is folded)
        return await _not_waiting(svc, run_id)
    b = ask.use.budget
    if person.id != b.owner_id and not is_admin(svc, person):
        owner = b.owner_name or "the budget's owner"
        return Refused(f"Only {owner} or an admin may decide about {b.place_name}'s budget.", run)
    if await kept.take_ask(svc.store, run_id) is None:
        return Refused("Somebody decided about this request already.", run)
    decided = SpendApprovalDecided(
        run_id=run_id, approved=approve, by=person.id, by_name=person.name
    )
    if approve:
        await kept.grant_pass(svc.store, run_id, time.time(), _PASS_S)
        await svc.store.emit(decided)
        await svc.scheduler.submit(TurnJob(run_id=run_id, kind="plan"))
        return Done(run, Said("Spending over the budget approved by ", person.name, "."))
    reason = (
        f"{person.name} did not approve going over {b.place_name}'s budget of "
        f"{money(b.month_usd)} for {ask.month} ({money(ask.use.spent_usd)} spent)"
    )
    finished = RunFinished(run_id=run_id, status=RunStatus.FAILED, error=reason)

    def deny(r: RunState) -> tuple[RunState | None, list[RunEvent]]:
        step = transition(r, RunStatus.FAILED, by=person.id, note=reason)
        if not step.ok:  # cancelled meanwhile: nothing to end
            return None, [decided]
        step.run.error = reason
        return step.run, [decided, finished]

    ended = await svc.store.update_run(run_id, deny)
    return Done(ended or run, Said("Spending over the budget denied by ", person.name, "."))


async def _not_waiting(svc: Services, run_id: str) -> Refused:
    """Why nothing waits on ``run_id``: its run ended before anybody decided
    (:class:`AskEnded`), or no ask is there (decided, never asked, no such run)."""
    try:
        run = await svc.store.get_run(run_id)
    except RunError:
        run = None
    if run is not None and run.status.terminal:
        events = [e for _, e in await svc.store.read_events(run_id)]
        asked = any(isinstance(e, SpendApprovalAsked) for e in events)
        if asked and not any(isinstance(e, SpendApprovalDecided) for e in events):
            ends = [e.error for e in events if isinstance(e, RunFinished) and e.error]
            how = ends[-1] if ends else run.error or run.status.value
            return AskEnded(
                f"⏹ This request ended before anybody decided about its spending ({how}).",
                run,
            )
    return Refused("This request does not wait for a spending decision (any more).")


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


async def planning_from(svc: Services, run: RunState) -> float | None:
    """When ``run``'s planning may have started: None while it waits for a spending
    decision (nobody gives it up), the approval's time once approved, else its creation."""
    if await kept.get_ask(svc.store, run.id) is not None:
        return None
    passed = await kept.passed_at(svc.store, run.id)
    return run.created_at if passed is None else max(run.created_at, passed)


_folded_at: dict[str, float] = {}


async def _warn_folded(svc: Services, run: RunState, cost_usd: float) -> None:
    """The warning a folded run's cost brings (said in its thread already if its relay
    saw the month past the line at the run's end: the claim is the same)."""
    await warn_after(svc, run, folded_usd=cost_usd)


async def fold_ended(svc: Services, *, now: float | None = None) -> int:
    """The background loop's pass (``core.spend.ledger.fold_ended``), at most once every
    ``[governance] fold_every_s`` in this process; how many runs were folded."""
    now = time.monotonic() if now is None else now
    prefix = svc.store.keys.prefix
    if now - _folded_at.get(prefix, -1e18) < svc.settings.governance.fold_every_s:
        return 0
    _folded_at[prefix] = now
    try:
        return await ledger.fold_ended(svc, then=_warn_folded)
    except Exception:
        log.exception("folding ended runs into the spend ledger failed; next pass retries")
        return 0
