"""The terminal as a run's thread: the console as a chat-layer adapter.

The console follows a run through the chat layer's relay (``bots.chat.relay``), like
Slack, Discord and the web chat: the relay folds the run's events into intentions, the
console's renderer (``bots.console.render``) makes them messages and its transport
(``bots.console.transport``) prints them — the status message as the live status line.
Between them the console prints its trace (``bots.console.trace``): the agents at work,
which chat threads leave to the run's inspector page.

What the relay queues is delivered at once, in order, in this process
(:func:`deliver`), not through the durable outbox in Redis: a terminal is its process.
Nothing could show a message after the process ends, and no other process can print
into this terminal, so a queue that outlives the process, leases and resuming would
keep keys nobody reads again. Delivered at once, a run's messages come in the order of
its events, between the trace's lines and before what the console then asks the person.

May call: ``bots.chat`` (relay, outbox entries, ports), ``bots.console``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console

from bots.chat.outbox import Entry
from bots.chat.ports import Adapter, Limits, Place, Rendered
from bots.chat.relay import ThreadRelay
from bots.console.live import LiveStatus
from bots.console.render import ConsoleRenderer
from bots.console.trace import Trace
from bots.console.transport import STATUS, ConsoleTransport
from core.services import Services
from core.types.events import ErrorRaised, RunEvent, RunFinished

log = logging.getLogger(__name__)
PLACE = "terminal"
# A terminal shows any length, lists every file in place, and redraws its status line at
# no cost (rich's live display refreshes at its own pace): no caps, no pacing.
LIMITS = Limits(
    message_chars=1_000_000_000,
    status_interval_s=0.0,
    result_file_chars=1_000_000_000,
    outputs_max_files=1_000_000,
    outputs_max_bytes=1 << 62,
)


def console_adapter(transport: ConsoleTransport) -> Adapter:
    """The console as the chat layer sees it, printing with ``transport``."""
    return Adapter("console", "the console", ConsoleRenderer(), transport, LIMITS)


class ConsoleRelay(ThreadRelay):
    """The chat layer's relay, with two differences for a terminal: the proposal card is
    shown where the console asks for the decision (``bots.console.proposal``, the same
    card), not again when the run starts; and the run's files are listed under its
    result (at the bottom of the terminal), not above it as in a chat thread."""

    files: tuple[Entry, ...] = ()

    async def post_card(self) -> None:
        return None

    async def post_outputs(self, event: RunFinished) -> None:
        queued = len(self.out)
        await super().post_outputs(event)
        self.files = tuple(self.out[queued:])
        del self.out[queued:]

    def post_result(self, event: RunFinished) -> None:
        super().post_result(event)
        self.out.extend(self.files)


@dataclass
class Delivery:
    """The run's status message in the terminal: its latest content (``version``: how
    many contents the relay made), whether it is posted, and the content it shows."""

    status: Rendered | None = None
    version: int = 0
    posted: bool = False
    shown: int = 0


async def deliver(adapter: Adapter, place: Place, entries: Sequence[Entry], now: Delivery) -> None:
    """``entries`` in order (the status message's with its latest content); an entry the
    transport refuses is replaced by its fallback (``instead``), one it took is followed
    by what comes once it is delivered (``then``)."""
    transport = adapter.transport
    for entry in entries:
        try:
            match entry.kind:
                case "status":
                    status = now.status or Rendered("", {"kind": STATUS, "running": True})
                    await transport.post(place, status.text, status.payload)
                    now.posted, now.shown = True, now.version
                case "upload" if entry.file is not None:
                    await transport.upload(place, entry.file)
                case "files":
                    await transport.send_files(place, entry.outgoing)
                case _:
                    await transport.post(place, entry.text, entry.payload)
        except Exception as exc:
            log.error("the console could not show the %s (%s)", entry.what, exc)
            await deliver(adapter, place, entry.instead, now)
            continue
        await deliver(adapter, place, entry.then, now)


async def redraw(adapter: Adapter, place: Place, now: Delivery) -> None:
    """Show the status message's latest content, if it is posted and shows an older."""
    if now.posted and now.status is not None and now.shown < now.version:
        now.shown = now.version
        await adapter.transport.update(place, STATUS, now.status.text, now.status.payload)


class ConsoleThread:
    """Follows runs into ``console``: each event's trace lines, then what the relay
    makes of it, delivered at once. Call it with each event (``on_event`` of core's
    ``follow``). ``hint``: said after the live status line (what the person may type).
    With ``svc`` (:meth:`attach`): the run's files and budget figures too."""

    def __init__(self, console: Console, *, verbose: bool = False, hint: str = "") -> None:
        self.console = console
        self.live = LiveStatus(console, hint)
        self.transport = ConsoleTransport(console, self.live)
        self.adapter = console_adapter(self.transport)
        self.trace = Trace(verbose=verbose)
        self.svc: Services | None = None
        self.relay: ConsoleRelay | None = None
        self.delivery = Delivery()

    @property
    def tools_called(self) -> int:
        return self.trace.tools_called

    def attach(self, svc: Services) -> None:
        """Read the runs from ``svc``: their files (where they are on disk for a local
        workspace) and budgets."""
        from core.workspace.local_store import LocalWorkspace

        self.svc = svc
        if isinstance(svc.workspace, LocalWorkspace):
            self.transport.folder = svc.settings.workspace_dir

    def _relay(self, run_id: str) -> ConsoleRelay:
        if self.relay is None or self.relay.run_id != run_id:
            place = Place(PLACE, run_id)
            renderer, limits = self.adapter.renderer, self.adapter.limits
            self.relay = ConsoleRelay(place, run_id, renderer, limits, svc=self.svc)
            self.delivery = Delivery()
        return self.relay

    async def __call__(self, event: RunEvent) -> None:
        lines = self.trace.lines(event)
        under = isinstance(event, ErrorRaised)  # an error's hint: under the thread's note
        if not under:
            self._print(lines)
        relay = self._relay(event.run_id)
        await relay.on_event(event)
        relay.show_status(force=isinstance(event, RunFinished))
        entries, status = relay.take()
        now = self.delivery
        if status is not None:
            now.status, now.version = status, now.version + 1
        await deliver(self.adapter, relay.place, entries, now)
        await redraw(self.adapter, relay.place, now)
        if under:
            self._print(lines)

    def _print(self, lines: list[str]) -> None:
        for line in lines:
            self.console.print(line)

    def close(self) -> None:
        """Stop following: the live status line goes."""
        self.live.stop()
