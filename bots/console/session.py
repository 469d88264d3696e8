"""Following a run in the terminal while the person can still act on it.

What the person types while the run works, one line at a time (the console's counterpart
of a reply in the run's Slack thread; the same core functions):

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

The run is shown through the chat layer (``bots.console.thread``: its trace, then its
thread); the status line lives at the bottom and stops while the console waits for an
answer or a budget choice, so what the person types stays readable.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import deque
from collections.abc import Iterator

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
from core.state.event_hub import follow_events
from core.types.events import (
    ApprovalAsked,
    ApprovalDecided,
    BudgetReached,
    FormAsked,
    FormClosed,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStatusChanged,
    SpendApprovalAsked,
    SpendApprovalDecided,
)
from core.types.people import Person
from core.types.run import RunState, RunStatus

CANCEL = {"c", "cancel"}


class Interrupted(Exception):
    """The person pressed Ctrl-C twice: quit without waiting for the run."""


class RunConsole:
    """Shows one run (through ``thread``) and acts on the lines of ``lines``."""

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
        self.interrupts = 0
        self._main: asyncio.Task[RunState] | None = None
        self._quit = False

    # -- following -----------------------------------------------------------------------------

    async def follow(self, run_id: str) -> RunState:
        """Follow ``run_id`` to its end, taking lines meanwhile; its final state.
        Raises :class:`Interrupted` on a second Ctrl-C."""
        self.run_id = run_id
        self._main = asyncio.create_task(self._follow(), name="caramba-console-run")
        with self._ctrl_c():
            try:
                final = await self._main
            except asyncio.CancelledError:
                if self._quit:
                    raise Interrupted from None
                raise
            finally:
                self._spin(False)
        if self._quit:  # the run ended as the second Ctrl-C came
            raise Interrupted
        return final

    async def _follow(self) -> RunState:
        reading = asyncio.create_task(self._read(), name="caramba-console-input")
        self._spin(True)
        try:
            blocking = not self.svc.settings.redis.embedded
            async for event in follow_events(self.svc.store, self.run_id, blocking=blocking):
                await self.thread(event)
                await self._note(event)
        finally:
            reading.cancel()
            await asyncio.wait([reading])  # a cancel of this task itself still propagates
            self.lines.unread(list(self.held))  # for the prompts after the run
            self.held.clear()
        if not reading.cancelled() and (failed := reading.exception()) is not None:
            raise failed  # the console stopped taking input: not to be hidden
        return await self.svc.store.get_run(self.run_id)

    async def _note(self, event: RunEvent) -> None:
        """Keep what the next line means up to date with the run."""
        match event:
            case QuestionAsked():
                self.questions[event.question_id] = event
                if self.held:
                    self.say(
                        f"  [dim]↳ answered with what you typed before: {escape(self.held[0])}[/]"
                    )
                    await self.take(self.held.popleft())
                else:
                    self.say(
                        "  [bold]↳ type your answer and press Enter[/] [dim](c: cancel the run)[/]"
                    )
                if self.questions and self.input_ended:
                    self.say("  [dim]no more input: the question waits for its time-out[/]")
            case QuestionClosed():
                self.questions.pop(event.question_id, None)
            case FormAsked():
                self.forms.asked(event)
                while self.held and self.forms.pending:  # piped ahead: the form's answers
                    await self.forms.take(self.held.popleft())
            case FormClosed():
                self.forms.closed(event)
            case BudgetReached():
                self.budget.paused(event)
                while self.held and self.budget.pause is not None:
                    await self.take(self.held.popleft())
                if self.budget.pause is not None and self.input_ended:
                    self.say("  no more input: stopping the run at its budget")
                    await self.budget.stop()
            case ApprovalAsked():
                self.approvals.asked(event)
                while self.held and self.approvals.open:
                    await self.take(self.held.popleft())
                if self.approvals.open and self.input_ended:
                    await self._no_input_left()
            case ApprovalDecided():
                self.approvals.closed(event.approval_id)
            case SpendApprovalAsked():  # over its channel's budget (bots.console.spend)
                self.spend.asked(event)
                while self.held and self.spend.open:
                    await self.take(self.held.popleft())
                if self.spend.open and self.input_ended:
                    await self._no_spend_input()
            case SpendApprovalDecided():
                self.spend.closed(event.run_id)
            case RunStatusChanged() if event.status is RunStatus.RUNNING:
                self.budget.pause = None  # extended (here or by someone else)
            case RunFinished():
                self.questions.clear()
                self.budget.pause = None
                self._spin(False)
                if event.status is RunStatus.CANCELLED:
                    self.say("[bold yellow]The run was cancelled.[/]")
                return
            case _:
                pass
        self._spin(True)

    # -- what the person types -----------------------------------------------------------------

    async def _read(self) -> None:
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

    # -- Ctrl-C and the spinner ----------------------------------------------------------------

    def interrupt(self) -> None:
        """Ctrl-C: the first cancels the run, the second quits at once."""
        self.interrupts += 1
        if self.interrupts == 1:
            self.say("\n  [yellow]Ctrl-C: cancelling the run (Ctrl-C again quits at once)[/]")
            asyncio.get_running_loop().create_task(self.cancel())
            return
        self._quit = True
        if self._main is not None:
            self._main.cancel()

    @contextlib.contextmanager
    def _ctrl_c(self) -> Iterator[None]:
        """Ctrl-C goes to :meth:`interrupt` while the run is followed (main thread only)."""
        loop = asyncio.get_running_loop()
        previous = signal.getsignal(signal.SIGINT)
        try:
            loop.add_signal_handler(signal.SIGINT, self.interrupt)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
            yield
            return
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, previous)

    def _spin(self, on: bool) -> None:
        """The status line shows while the agents work and nobody is asked anything."""
        on = on and not self.questions and self.budget.pause is None and not self.approvals.open
        self.thread.live.hold(not on)

    def say(self, text: str) -> None:
        self.console.print(text)
