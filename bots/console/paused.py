"""A run paused at its budget, in the console: the person extends it (by how much:
asked, with the configured default) or stops it, through the people room
(``core.runs.people``: who may, and the run still paused, are its rules)."""

from __future__ import annotations

from collections.abc import Callable

from bots.console.person import ConsoleWho
from bots.console.text import escape
from core.runs import people
from core.runs.outcomes import Refused
from core.runs.pause_words import amount as figure
from core.services import Services
from core.types.events import BudgetReached
from core.types.figures import exact_cost, tokens
from core.types.people import Person

EXTEND = {"", "e", "extend"}
STOP = {"s", "stop"}


class PausedBudget:
    """The pause the run is in (if any) and what the person's next line means for it."""

    def __init__(self, svc: Services, person: Person, say: Callable[[str], None]) -> None:
        self.svc = svc
        self.person = person
        self.who = ConsoleWho(person)
        self.say = say
        self.run_id = ""
        self.pause: BudgetReached | None = None
        self.extending = False

    def paused(self, pause: BudgetReached) -> None:
        """The run paused: offer the choices."""
        self.run_id, self.pause, self.extending = pause.run_id, pause, False
        self.offer(pause)

    def offer(self, pause: BudgetReached) -> None:
        self.say(
            f"  [bold]↳ e[/]: extend (by {escape(_default(pause))} unless you say more), "
            "[bold]s[/]: stop with the results so far, [bold]c[/]: cancel "
            "[dim](enter: e)[/]"
        )

    async def take(self, text: str) -> None:
        """What the person typed while the run is paused."""
        pause = self.pause
        assert pause is not None
        if text.lower() in STOP:  # also instead of an amount: changed their mind
            await self.stop()
        elif self.extending or _amount(text) is not None:
            amount = _amount(text) if text else _default_amount(pause)
            if amount is None or amount <= 0:
                self.say(
                    f"  [red]not an amount: {escape(text)}[/] — type a number of "
                    f"{_unit(pause)}, or enter for {escape(_default(pause))}"
                )
                return
            await self._extend(pause, amount)
        elif text.lower() in EXTEND:
            self.extending = True
            self.say(
                f"  [bold]↳ extend by how many {_unit(pause)}?[/] "
                f"[dim](enter: {escape(_default(pause))})[/]"
            )
        else:
            self.offer(pause)

    async def _extend(self, pause: BudgetReached, amount: float) -> None:
        done = await people.extend(
            self.svc,
            self.run_id,
            self.person,
            who=self.who,
            tokens=int(amount) if pause.what == "tokens" else None,
            cost_usd=amount if pause.what == "cost" else None,
            wall_clock_s=amount if pause.what == "wall_clock" else None,
        )
        self.extending = False
        if isinstance(done, Refused):
            self.say(f"  [red]{escape(done.reason)}[/]")
        else:
            self.pause = None
            b = done.run.budget
            now = ""
            if b is not None:
                now = (
                    f" (now {tokens(b.tokens)} · {exact_cost(b.cost_usd)} · {b.wall_clock_s:.0f} s)"
                )
            self.say(f"  [green]▶ extended by {escape(_said(pause.what, amount))}{now}[/]")

    async def stop(self) -> None:
        """End the run with the results so far (``budget.stop_run``)."""
        done = await people.stop(self.svc, self.run_id, self.person, who=self.who)
        self.extending = False
        if isinstance(done, Refused):
            self.say(f"  [red]{escape(done.reason)}[/]")
        else:
            self.pause = None
            self.say("  [yellow]■ stopped at the budget, with the results so far[/]")


def _unit(pause: BudgetReached) -> str:
    return {"tokens": "tokens", "cost": "dollars", "wall_clock": "seconds"}[pause.what]


def _default_amount(pause: BudgetReached) -> float:
    return {
        "tokens": float(pause.extend_tokens),
        "cost": pause.extend_cost_usd,
        "wall_clock": pause.extend_wall_clock_s,
    }[pause.what]


def _said(what: str, amount: float) -> str:
    """``amount`` of limit ``what`` in the words every adapter uses (``$2.00``,
    ``100,000 tokens``, ``15 min``)."""
    return figure(what, amount, int(amount), amount)


def _default(pause: BudgetReached) -> str:
    return _said(pause.what, _default_amount(pause))


def _amount(text: str) -> float | None:
    """A number the person typed ("2", "$1.50", "50000"), or None."""
    try:
        return float(text.strip().lstrip("$").replace(",", "").replace("_", ""))
    except ValueError:
        return None
