"""A request over its budget waits for a person, and a month near its budget is said:

- :func:`gate` — called by ``core.runs.requests`` before a request is planned: a request
  that would take its channel's (or workspace's) month over its budget waits — durably:
  the ask is kept in Redis and the run stays in ``planning`` with no worker held — for
  its owner in the thread (a ``SpendApprovalAsked`` event); a month at ``warn_at`` of its
  budget is said once (``SpendWarned``).
- :func:`approve_spend` — the budget's owner or an admin, once per request: the request
  goes on to planning (approve) or ends with the reason (deny).
- :func:`warn_after` — the warnings a run's end (or its fold into the ledger) brings.

May call: ``core.spend``, ``core.state`` (``core.state.spend``, the store), the scheduler.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.errors import RunError
from core.runs.outcomes import Done, Refused, Said
from core.runs.spend_budgets import is_admin, money
from core.scheduler.base import TurnJob
from core.spend import budgets, ledger
from core.state import spend as kept
from core.state.people import PeopleMarks
from core.state.store import transition
from core.types.events import (
    RunEvent,
    RunFinished,
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
)
from core.types.people import Person
from core.types.run import RunState, RunStatus
from core.types.spend import BudgetUse

if TYPE_CHECKING:
    from core.services import Services

# How long an approval to go over budget lets the request's planning go on.
_PASS_S = 86_400


@dataclass(frozen=True)
class AskEnded(Refused):
    """A click on an ask whose run ended before anybody decided (cancelled, given up):
    ``reason`` says so, for the ask's message too (its buttons are dead)."""


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


async def planning_from(svc: Services, run: RunState) -> float | None:
    """When ``run``'s planning may have started: None while it waits for a spending
    decision (nobody gives it up), the approval's time once approved, else its creation."""
    if await kept.get_ask(svc.store, run.id) is not None:
        return None
    passed = await kept.passed_at(svc.store, run.id)
    return run.created_at if passed is None else max(run.created_at, passed)
