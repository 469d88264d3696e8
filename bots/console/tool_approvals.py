"""A tool call waiting for approval, in the console: the request is shown in the thread
(``bots.console.render``); the person's next line decides it — ``o`` approve once, ``r``
approve for this run, ``d <why>`` deny (the agent reads why) — through the people room
(``core.runs.people.approve_action``: who may, once per call, are its rules)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from bots.chat.approvals import ToolApproval, approval_text, decided_text
from bots.console.person import ConsoleWho
from bots.console.text import escape, printable
from core.runs import people
from core.runs.outcomes import Refused
from core.services import Services
from core.types.approvals import Choice
from core.types.events import ApprovalAsked
from core.types.people import Person

_CHOICES: dict[str, Choice] = {"o": "once", "once": "once", "r": "run", "run": "run"}
DENY = ("d", "deny")


def ask(console: Console) -> tuple[Choice, str]:
    """Ask at the terminal (blocking) until the line is a choice: the choice and the
    reason (the offline demo; ``caramba run`` reads lines in :class:`ToolApprovals`)."""
    while True:
        line = console.input(
            "  [bold]o[/]: approve once, [bold]r[/]: approve for this run, "
            "[bold]d[/] [dim]<why>[/]: deny → "
        )
        word, _, rest = line.strip().partition(" ")
        if word.lower() in DENY:
            return "deny", rest.strip()
        if word.lower() in _CHOICES:
            return _CHOICES[word.lower()], ""


def approval_lines(a: ToolApproval) -> str:
    """The request as the console shows it (rich markup, escaped)."""
    return "  [bold magenta]" + escape(printable(approval_text(a))).replace("\n", "\n    ") + "[/]"


class ToolApprovals:
    """The calls of the run waiting for the person (oldest first) and what their next
    line means for the first of them."""

    def __init__(self, svc: Services, person: Person, say: Callable[[str], None]) -> None:
        self.svc, self.person, self.say = svc, person, say
        self.who = ConsoleWho(person)
        self.open: dict[str, ApprovalAsked] = {}

    def asked(self, event: ApprovalAsked) -> None:
        self.open[event.request.id] = event
        self.offer()

    def closed(self, approval_id: str) -> None:
        self.open.pop(approval_id, None)

    def offer(self) -> None:
        self.say(
            "  [bold]↳ o[/]: approve once, [bold]r[/]: approve for this run, "
            "[bold]d[/] [dim]<why>[/]: deny, [bold]c[/]: cancel the run"
        )

    async def take(self, text: str) -> None:
        """What the person typed while a call waits."""
        word, _, rest = text.strip().partition(" ")
        choice = _CHOICES.get(word.lower())
        if choice is None and word.lower() in DENY:
            choice = "deny"
        if choice is None:
            self.offer()
            return
        await self.decide(choice, rest.strip())

    async def decide(self, choice: Choice, reason: str = "") -> None:
        approval_id = next(iter(self.open))
        run_id = self.open[approval_id].run_id
        done = await people.approve_action(
            self.svc, run_id, approval_id, self.person, choice, reason=reason, who=self.who
        )
        self.open.pop(approval_id, None)
        if isinstance(done, Refused):
            self.say(f"  [red]{escape(done.reason)}[/]")
        else:
            self.say(f"  [green]{escape(decided_text(done.line))}[/]")
