"""Following a run in the terminal while the person can still act on it: what they
type meanwhile is ``bots.console.typed_lines``'s (an answer, a tool call's approval, the
budget's choice, ``c`` to cancel); a first Ctrl-C cancels the run, a second quits at once.

The run is shown through the chat layer (``bots.console.thread``: its trace, then its
thread); the status line lives at the bottom and stops while the console waits for an
answer or a budget choice, so what the person types stays readable.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

from rich.console import Console

from bots.console.lines import Lines
from bots.console.text import escape
from bots.console.thread import ConsoleThread
from bots.console.typed_lines import TypedLines
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


class Interrupted(Exception):
    """The person pressed Ctrl-C twice: quit without waiting for the run."""


class RunConsole(TypedLines):
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
        super().__init__(svc, console, thread, lines, person=person, hold_empty=hold_empty)
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

    # -- Ctrl-C --------------------------------------------------------------------------------

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
