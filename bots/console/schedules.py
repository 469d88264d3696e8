"""Schedules at the terminal (``caramba schedule watch``): this process fires the
schedules due (as every worker's background loop does: one process per slot) and
prints each firing whose place is the console — a line when it fires, a line when its
run ends with its result — like a chat channel shows a firing's thread.

A firing that asks for approval (its cohort or budget changed) waits; with
``approve=True`` the person at the terminal approves it (they hold the deployment's
Redis, so they are an approver here).

May call: ``core.runs`` (firings, people), ``core.state.event_hub``, ``bots.console``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rich.console import Console

from bots.console.text import escape
from core.runs import people
from core.runs.approval import Approve
from core.runs.firings import fire_due, latest_firing, read_firings
from core.runs.outcomes import Refused
from core.schedules.clock import SYSTEM_CLOCK, Clock
from core.services import Services
from core.state.event_hub import follow_events
from core.types.events import RunFinished
from core.types.people import Person
from core.types.run import RunStatus
from core.types.schedules import Firing

log = logging.getLogger(__name__)
PLATFORM = "console"


class Watch:
    """Fires and shows the console's schedules on ``out`` until ``stop`` is set."""

    def __init__(
        self,
        svc: Services,
        out: Console,
        person: Person,
        *,
        approve: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        poll_s: float = 1.0,
    ) -> None:
        self.svc, self.out, self.person, self.approve = svc, out, person, approve
        self.clock, self.poll_s = clock, poll_s
        self.after = "0-0"
        self.following: set[asyncio.Task[None]] = set()
        self.shown = 0

    async def start(self) -> None:
        """Show only firings from now on."""
        self.after = await latest_firing(self.svc)

    async def once(self, fire: bool = True) -> int:
        """Fire what is due, then show the console's new firings; how many were shown."""
        if fire:
            await fire_due(self.svc, self.clock)
        shown = 0
        for entry_id, firing in await read_firings(self.svc, self.after):
            self.after = entry_id
            if firing.place.platform != PLATFORM:
                continue
            await self._show(firing)
            shown += 1
        return shown

    async def _show(self, f: Firing) -> None:
        how = "waits for approval (its cohort or budget changed)" if f.asks else "running now"
        self.out.print(
            f"[bold]⏰ Scheduled run[/] ({escape(f.words)}) by {escape(f.owner_name)}: "
            f"{escape(f.task)} — {how}.",
            highlight=False,
        )
        if f.asks and self.approve:
            done = await people.decide(self.svc, f.run_id, self.person, Approve())
            line = done.reason if isinstance(done, Refused) else done.line
            self.out.print(f"  {escape(line)}", highlight=False)
        elif f.asks:
            self.out.print("  [dim]Run `caramba schedule watch --approve` to approve it.[/]")
            return
        task = asyncio.create_task(self._follow(f), name=f"console-firing-{f.run_id}")
        self.following.add(task)
        task.add_done_callback(self.following.discard)

    async def _follow(self, f: Firing) -> None:
        blocking = not self.svc.settings.redis.embedded
        try:
            async for event in follow_events(self.svc.store, f.run_id, blocking=blocking):
                if isinstance(event, RunFinished):
                    self._ended(f, event)
        except Exception:
            log.exception("following the scheduled run %s failed", f.run_id)

    def _ended(self, f: Firing, event: RunFinished) -> None:
        if event.status is RunStatus.COMPLETED:
            said = f"  [green]✓[/] {escape(f.task)}: {escape(event.result or '')}"
        else:
            said = f"  [red]✗[/] {escape(f.task)}: {event.status.value} {escape(event.error or '')}"
        self.out.print(said.rstrip(), highlight=False)
        self.shown += 1

    async def run(self, stop: asyncio.Event) -> None:
        """Fire and show until ``stop`` is set (a failing round is logged and retried)."""
        await self.start()
        while not stop.is_set():
            try:
                await self.once()
            except Exception:
                log.exception("a round of schedule watching failed; trying again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)
        for task in list(self.following):
            task.cancel()
