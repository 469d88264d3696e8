"""What the person types while a run works, one line at a time (the console's
counterpart of a reply in the run's Slack thread; the same core functions):

* ``c`` or ``cancel`` cancels the run (``people.cancel``), as does a first Ctrl-C; a
  second Ctrl-C quits at once;
* with an agent's question open, the line is its answer (``people.reply``);
* with a tool call waiting for approval, ``o`` approves it once, ``r`` for the run,
  ``d <why>`` denies it (``people.approve_action``); with no input left it is denied;
* with the run paused at its budget, ``e`` extends it (by how much is asked next; enter
  takes the default, config [humans]) and ``s`` stops it (``people.extend``, ``stop``);
* a line typed when nothing is asked is kept for the next thing that is: a question,
  the budget, or the rating after the run. So answers piped in ahead of time are taken
  in order, whenever the run gets to ask.

:class:`TypedLines` keeps what the next line means (the questions, forms, tool calls,
budget pause and spending requests open) and acts on each line; following the run and
Ctrl-C are ``bots.console.session``'s.
"""

from __future__ import annotations

from collections import deque

from rich.console import Console

from bots.console.forms import ConsoleForms
from bots.console.lines import Lines
from bots.console.paused import PausedBudget
from bots.console.person import ConsoleWho, console_person
from bots.console.spend import SpendAsks
from bots.console.text import escape
from bots.console.thread import ConsoleThread
from bots.console.tool_approvals import ToolApprovals
from core.runs import people
from core.runs.outcomes import NotDelivered, Refused
from core.services import Services
from core.types.events import QuestionAsked
from core.types.people import Person

CANCEL = {"c", "cancel"}


class TypedLines:
    """Acts on the lines of ``lines`` for one run, shown through ``thread``."""

    def __init__(
        self,
        svc: Services,
        console: Console,
        thread: ConsoleThread,
        lines: Lines,
        *,
        person: Person | None = None,
        hold_empty: bool = False,
    ) -> None:
        self.svc = svc
        self.console = console
        self.thread = thread
        self.lines = lines
        self.person = person or console_person()
        self.who = ConsoleWho(self.person)
        self.run_id = ""
        self.questions: dict[str, QuestionAsked] = {}
        self.budget = PausedBudget(svc, self.person, self.say)
        self.forms = ConsoleForms(svc, self.person, self.say)
        self.approvals = ToolApprovals(svc, self.person, self.say)
        self.spend = SpendAsks(svc, self.person, self.say)
        self.input_ended = False
        # Lines typed when nothing was asked, for the next thing that is.
        self.held: deque[str] = deque()
        # Piped input: an empty line is an answer in its place ("enter: the default"); at a
        # terminal, Enter pressed when nothing is asked means nothing.
        self.hold_empty = hold_empty
        self.cancelled = False

    async def _read(self) -> None:
        """Take every line typed until the input ends."""
        while True:
            line = await self.lines.get()
            if line is None:
                await self._input_end()
                return
            await self.take(line)

    async def take(self, line: str) -> None:
        """Act on one line the person typed."""
        text = line.strip()
        if text.lower() in CANCEL:
            await self.cancel()
        elif self.budget.pause is not None:
            await self.budget.take(text)
        elif self.forms.pending:
            await self.forms.take(text)
        elif self.approvals.open:
            await self.approvals.take(text)
        elif self.spend.open:
            await self.spend.take(text)
        elif not text and not (self.hold_empty and not self.questions):
            return
        elif self.questions:
            await self._answer(text)
        else:
            self.held.append(text)
            if len(self.held) == 1:
                self.say("  [dim]nothing is asked now: kept for what is asked next (c: cancel)[/]")
        self._spin(True)

    async def _answer(self, text: str) -> None:
        """Answer the oldest open question (its agent wakes with the answer)."""
        qid = next(iter(self.questions))
        said = await people.reply(self.svc, self.run_id, text, self.person)
        self.questions.pop(qid, None)  # answered here, or closed already
        if isinstance(said, NotDelivered):
            self.say(f"  [red]{escape(said.hint)}[/]")
            if self.questions:
                return
            self.held.appendleft(text)

    async def _input_end(self) -> None:
        self.input_ended = True
        if self.approvals.open:
            await self._no_input_left()
        if self.spend.open:
            await self._no_spend_input()
        if self.budget.pause is not None:
            self.say("  no more input: stopping the run at its budget")
            await self.budget.stop()

    async def _no_input_left(self) -> None:
        """Nobody is left at the console to approve: the waiting calls are denied."""
        while self.approvals.open:
            self.say("  no more input: denying the tool call")
            await self.approvals.decide("deny", "nobody at the console could approve it")

    async def _no_spend_input(self) -> None:
        """Nobody is left at the console to approve spending: denied if this person may,
        else the run is cancelled (nothing else would end it)."""
        self.say("  no more input: not approving spending over the budget")
        await self.spend.decide(False)
        if self.spend.open:
            self.spend.open.clear()
            await self.cancel()

    async def cancel(self) -> None:
        """Cancel the run through core; agents stop within one turn."""
        if self.cancelled:
            self.say("  [dim]already cancelling…[/]")
            return
        self.cancelled = True
        done = await people.cancel(self.svc, self.run_id, self.person, who=self.who)
        if isinstance(done, Refused):
            self.cancelled = False
            self.say(f"  [red]{escape(done.reason)}[/]")
        else:
            self.say("  [yellow]Cancelling: every agent stops within one turn…[/]")

    def _spin(self, on: bool) -> None:
        """The status line shows while the agents work and nobody is asked anything."""
        on = on and not self.questions and self.budget.pause is None and not self.approvals.open
        self.thread.live.hold(not on)

    def say(self, text: str) -> None:
        self.console.print(text)
