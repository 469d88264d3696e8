"""A run paused at its budget, in its thread: the relay's side (the pause as a
:class:`~bots.chat.intentions.Paused` with Extend / Stop, the status line saying so, a
line when the run goes on) and the words every adapter uses for it, in plain figures
(``bots.chat.numbers``). The buttons are the adapters'; a click calls
``core.runs.budget.extend_run`` or ``stop_run``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bots.chat.intentions import Note, Paused
from bots.chat.numbers import cost, exact_cost, tokens
from core.config import HumansSettings
from core.types.events import BudgetReached, RunStatusChanged
from core.types.run import RunStatus

if TYPE_CHECKING:
    from bots.chat.relay import ThreadRelay

# The status line's ``doing`` while the run is paused (also how the relay knows it is).
PAUSED = "paused at the budget"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:.0f} s"


def spent(p: Paused) -> str:
    """What the run used against its limit: ``$4.08 of $3.00`` (``$0.0012 of $0.0004``:
    exact below a cent too), ``120,000 of 100,000 tokens``; core's own words where the
    limit is not known (or is the wall clock)."""
    if p.what == "cost" and p.limit_cost_usd:
        return f"the run spent {exact_cost(p.cost_usd)} of {exact_cost(p.limit_cost_usd)}"
    if p.what == "tokens" and p.limit_tokens:
        return f"the run used {p.tokens:,} of {tokens(p.limit_tokens)}"
    return p.detail


def pause_text(p: Paused) -> str:
    """The pause, in plain words (not escaped)."""
    return (
        f"⏸ Paused at its budget: {spent(p)}. Extend it to go on, or stop here "
        "with the results so far."
    )


def amount(what: str, usd: float, n_tokens: int, seconds: float) -> str:
    """The figure that matters for limit ``what``: ``$2.00``, ``200,000 tokens``,
    ``15 min``."""
    if what == "tokens":
        return tokens(n_tokens)
    return _duration(seconds) if what == "wall_clock" else cost(usd)


def added(what: str, humans: HumansSettings) -> str:
    """What an extension (``core.runs.budget.extend_run``'s defaults) adds to the limit
    ``what`` that was reached."""
    h = humans
    return amount(what, h.extend_cost_usd, h.extend_tokens, h.extend_wall_clock_s)


def extend_label(p: Paused) -> str:
    """The Extend button's label: ``Extend by $2.00``."""
    figure = amount(p.what, p.extend_cost_usd, p.extend_tokens, p.extend_wall_clock_s)
    return f"Extend by {figure}"


STOP_LABEL = "Stop here"


def extended_text(who: str, added: str) -> str:
    """The pause once extended (``who``: a name, already in the platform's markup)."""
    return f"▶ Extended by {who}: +{added}"


def stopped_text(who: str) -> str:
    """The pause once stopped (``who`` as for :func:`extended_text`)."""
    return f"■ Stopped by {who}, with the results so far"


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
