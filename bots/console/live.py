"""The run's status line in the terminal: a spinner at the bottom whose text is the chat
layer's status message (``bots.console.transport`` posts and updates it), redrawn in
place while the run works.

A terminal cannot edit a line already printed; this one line is the exception (rich's
live display). It shows only at a terminal (not in a pipe or a log), while the run can
still change, and not while the person is asked something (:meth:`hold`), so what they
type stays readable. May call: rich.
"""

from __future__ import annotations

from rich.console import Console
from rich.status import Status


class LiveStatus:
    """The status line of the run followed in ``console``; ``hint`` after it (what the
    person may type meanwhile, "" for nothing)."""

    def __init__(self, console: Console, hint: str = "") -> None:
        self.console = console
        self.hint = hint
        self.text = ""
        self.held = False
        self._status: Status | None = None

    def show(self, text: str, *, running: bool = True) -> None:
        """The status message's latest content (markup); a run that cannot change any
        more (``running`` false) takes the line away: its result says how it ended."""
        self.text = text if running else ""
        self._sync()

    def hold(self, held: bool = True) -> None:
        """Hide the line while the person is asked something; show it again after."""
        self.held = held
        self._sync()

    def stop(self) -> None:
        """Take the line away for good (the console stops following the run)."""
        self.text = ""
        self._sync()

    def _line(self) -> str:
        hint = f" — {self.hint}" if self.hint else ""
        return f"[dim]{self.text}{hint}[/]"

    def _sync(self) -> None:
        shown = bool(self.text) and not self.held and self.console.is_terminal
        if shown and self._status is None:
            self._status = self.console.status(self._line())
            self._status.start()
        elif shown and self._status is not None:
            self._status.update(self._line())
        elif not shown and self._status is not None:
            self._status.stop()
            self._status = None
