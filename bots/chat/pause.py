"""A run paused at its budget, in its thread: the relay's side (the pause as a
:class:`~bots.chat.intentions.Paused` with Extend / Stop, the status line saying so, a
line when the run goes on) and the words every adapter shows for the pause, in plain
figures (``bots.chat.numbers``; an extension's figure and who extended or stopped the
run are the people room's words: ``core.runs.pause_words``). The buttons are the
adapters'; a click calls ``core.runs.people.extend`` or ``stop``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bots.chat.intentions import Note, Paused
from core.runs.pause_words import STOP_LABEL, amount
from core.types.events import BudgetReached, RunStatusChanged
from core.types.figures import exact_cost, number, tokens
from core.types.run import RunStatus

if TYPE_CHECKING:
    from bots.chat.relay import ThreadRelay

__all__ = ["PAUSED", "STOP_LABEL", "amount", "extend_label", "follow_pause", "pause_text"]

# The status line's ``doing`` while the run is paused (also how the relay knows it is).
PAUSED = "paused at the budget"


def spent(p: Paused) -> str:
    """What the run used against its limit: ``$4.08 of $3.00`` (``$0.0012 of $0.0004``:
    exact below a cent too), ``120,000 of 100,000 tokens``; core's own words where the
    limit is not known (or is the wall clock)."""
    if p.what == "cost" and p.limit_cost_usd:
        return f"the run spent {exact_cost(p.cost_usd)} of {exact_cost(p.limit_cost_usd)}"
    if p.what == "tokens" and p.limit_tokens:
        return f"the run used {number(p.tokens)} of {tokens(p.limit_tokens)}"
    return p.detail


def pause_text(p: Paused) -> str:
    """The pause, in plain words (not escaped)."""
    return (
        f"⏸ Paused at its budget: {spent(p)}. Extend it to go on, or stop here "
        "with the results so far."
    )


def extend_label(p: Paused) -> str:
    """The Extend button's label: ``Extend by $2.00``."""
    figure = amount(p.what, p.extend_cost_usd, p.extend_tokens, p.extend_wall_clock_s)
    return f"Extend by {figure}"


async def follow_pause(relay: ThreadRelay, event: BudgetReached | RunStatusChanged) -> None:
    """The relay's part: a :class:`Paused` when the run reaches its budget (and the
    status line says so); a line when it goes on after one."""
    if isinstance(event, BudgetReached):
        relay._status(phase="running", doing=PAUSED, tool="", who=relay.line.who or "the run")
        relay.show_status(force=True)
        relay.reply("budget pause", await _paused(relay, event))
    elif event.status is RunStatus.RUNNING and relay.line.doing == PAUSED:
        relay._status(doing="going on", tool="")
        relay.reply("budget extended", Note(await _going_on(relay)))


async def _paused(relay: ThreadRelay, event: BudgetReached) -> Paused:
    budget = None
    if relay.svc is not None and not relay.quiet:
        budget = (await relay.svc.store.get_run(relay.run_id)).budget
    return Paused(
        run_id=relay.run_id,
        what=event.what,
        detail=event.detail,
        tokens=event.tokens,
        cost_usd=event.cost_usd,
        limit_tokens=budget.tokens if budget else 0,
        limit_cost_usd=budget.cost_usd if budget else 0.0,
        extend_tokens=event.extend_tokens,
        extend_cost_usd=event.extend_cost_usd,
        extend_wall_clock_s=event.extend_wall_clock_s,
    )


async def _going_on(relay: ThreadRelay) -> str:
    said = "▶ The budget was extended: the run goes on"
    if relay.svc is None or relay.quiet:
        return said + "."
    budget = (await relay.svc.store.get_run(relay.run_id)).budget
    if budget is None:
        return said + "."
    return f"{said} (its budget is now {exact_cost(budget.cost_usd)} · {tokens(budget.tokens)})."
