"""A request over its channel's monthly budget, in the console: the ask is shown in the
thread (``bots.console.render``); the person's next line decides it — ``a`` approve,
``d`` deny — through ``core.runs.spend.approve_spend`` (who may — the budget's owner or
an admin — and once per request are its rules)."""

from __future__ import annotations

from collections.abc import Callable

from bots.chat.spend_asks import decided_text
from bots.console.text import escape
from core.runs import spend
from core.runs.outcomes import Refused
from core.services import Services
from core.types.events import SpendApprovalAsked
from core.types.people import Person

APPROVE = ("a", "approve", "y", "yes")
DENY = ("d", "deny", "n", "no")


class SpendAsks:
    """The requests of the run waiting for a spending decision and what the person's
    next line means for the first of them."""

    def __init__(self, svc: Services, person: Person, say: Callable[[str], None]) -> None:
        self.svc, self.person, self.say = svc, person, say
        self.open: dict[str, SpendApprovalAsked] = {}

    def asked(self, event: SpendApprovalAsked) -> None:
        self.open[event.run_id] = event
        self.offer()

    def closed(self, run_id: str) -> None:
        self.open.pop(run_id, None)

    def offer(self) -> None:
        self.say(
            "  [bold]↳ a[/]: approve spending over the budget, [bold]d[/]: deny, "
            "[bold]c[/]: cancel the run"
        )

    async def take(self, text: str) -> None:
        """What the person typed while a request waits."""
        word = text.strip().lower()
        if word in APPROVE:
            await self.decide(True)
        elif word in DENY:
            await self.decide(False)
        else:
            self.offer()

    async def decide(self, approve: bool) -> None:
        run_id = next(iter(self.open))
        done = await spend.approve_spend(self.svc, run_id, self.person, approve)
        if isinstance(done, Refused):
            self.say(f"  [red]{escape(done.reason)}[/]")
            if done.run is None or done.run.status.terminal or "already" in done.reason:
                self.open.pop(run_id, None)
            return
        self.open.pop(run_id, None)
        self.say(f"  [green]{escape(decided_text(done.line))}[/]")
