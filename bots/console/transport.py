"""The terminal as a chat platform (``bots.chat.ports.Transport``): what the console's
renderer made (``bots.console.render``) printed in order, below what is there already.

A terminal cannot edit what it printed. The status message is the one message updated
in place: its post and updates redraw the live status line (``bots.console.live``). Any
other update (the chat layer sends none today) prints the new version under a dim
"changed" line. A text file (an agent's post with a file name) is shown in a box; the
run's files are listed with their size, type and, for a local workspace, where they are
on disk. Printing does not fail for a reason worth trying again: a failed call is
refused at once (the courier posts its fallback).

May call: rich, ``bots.console`` (card, live, text), ``core.runs.approval`` (the card's
view), ``core.workspace.base`` (a file's type and size in words).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from bots.chat.ports import Failure, Files, Payload, Place, TextFile
from bots.console.card import card
from bots.console.live import LiveStatus
from bots.console.text import escape, printable
from core.runs.approval import ProposalView
from core.workspace.base import guess_mime, human_size

STATUS = "status"


def drawn(text: str, payload: Payload) -> RenderableType:
    """What the terminal prints for a message of the console's renderer."""
    shown = payload if isinstance(payload, dict) else {}
    match shown.get("kind"):
        case "panel":
            body = Markdown(text) if shown.get("body") == "markdown" else Text(text)
            return Panel(body, title=str(shown["title"]), border_style=str(shown["border"]))
        case "card":
            return card(ProposalView.model_validate(shown["view"]))
        case _:
            return text


class ConsoleTransport:
    """Prints into ``console``; the status message is ``live``. ``folder``: the local
    workspace's root (the run's files are shown where they are on disk), or None."""

    def __init__(self, console: Console, live: LiveStatus, folder: Path | None = None) -> None:
        self.console = console
        self.live = live
        self.folder = folder
        self._ids = itertools.count(1)

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        if isinstance(payload, dict) and payload.get("kind") == STATUS:
            self.live.show(text, running=bool(payload.get("running")))
            return STATUS
        self.console.print(drawn(text, payload))
        return f"m{next(self._ids)}"

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        if message_id == STATUS:
            await self.post(place, text, payload)
            return
        self.console.print("  [dim]↻ changed:[/]")
        self.console.print(drawn(text, payload))

    async def upload(self, place: Place, file: TextFile) -> None:
        body = Markdown(printable(file.content))
        self.console.print(
            Panel(body, title=file.comment or escape(file.title), border_style="blue")
        )

    async def send_files(self, place: Place, files: Files) -> None:
        if files.comment:
            self.console.print(files.comment)
        for f in files.files:
            about = f"{f.path} ({human_size(f.size)}, {guess_mime(f.path)})"
            where = f" → {self.folder / files.run / f.path}" if self.folder is not None else ""
            self.console.print(f"  📎 {escape(about)}{escape(where)}")

    async def forget_files(self, files: Files) -> None:
        return None  # listed once, by the one process that shows this terminal

    def classify(self, exc: BaseException) -> Failure:
        return Failure(retry=False, why=f"{type(exc).__name__}: {exc}")
