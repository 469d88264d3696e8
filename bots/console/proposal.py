"""The proposal card in the terminal, and the person's decision about it."""

from __future__ import annotations

from typing import Any, TextIO, cast

from rich.console import Console
from rich.prompt import Prompt

from bots.console.card import card
from bots.console.edit_form import Check, edit_agent
from bots.console.text import escape
from core.runs.approval import Approve, Decision, ProposalView, Reject

__all__ = ["ask", "card"]


def ask(
    console: Console,
    view: ProposalView,
    stream: TextIO | None = None,
    check: Check | None = None,
) -> Decision:
    """Approve, reject (with a reason) or edit one agent; blocking (run it in a thread).
    The answers are read from ``stream`` (the console's lines) if given, else stdin.
    ``check``: core's problems with an agent's edit (``core.runs.edits.apply_edit`` on the
    proposal as it is), so that the form asks again for a field core would refuse."""
    console.print(card(view))
    answers = cast(TextIO, _Answers(stream)) if stream is not None else None

    def said(question: str, **options: Any) -> str:
        return str(Prompt.ask(question, console=console, stream=answers, **options))

    while True:
        # Escaped: rich would take "[a]" for markup and print "pprove, dit or eject".
        choice = said(escape("[a]pprove, [e]dit or [r]eject"), choices=["a", "e", "r"], default="a")
        if choice == "a":
            return Approve()
        if choice == "r":
            return Reject(reason=said("Reason (optional)", default="", show_default=False))
        edit = edit_agent(said, console, view, check)
        if edit is not None:
            return edit


class _Answers:
    """Lines of ``stream`` as rich's prompt takes them from a terminal: without their
    newline (rich reads a stream's line whole, so Enter would not take the default), and
    EOFError at the end (not an empty answer forever)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def readline(self) -> str:
        line = self._stream.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")
