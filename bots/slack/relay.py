"""A run's progress in its Slack thread: the proposal card once planning produced a
cohort, one status message updated in place (at most about once per
``slack.status_interval_s``), milestone replies, the final result.

An API error is logged and the relay goes on: it ends only with the run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import fallback_text, proposal_blocks, result_blocks, status_blocks
from bots.slack.text import escape, split
from bots.slack.threads import Shown, Threads, after
from bots.slack.upload import preview, result_file
from core.config import SlackSettings
from core.runs.approval import view
from core.services import Services
from core.state.event_hub import EventHub
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ChatPosted,
    ErrorRaised,
    QuestionAsked,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
)
from core.types.run import RunStatus

log = logging.getLogger(__name__)


class ThreadRelay:
    """Posts one run's events into ``channel``/``thread_ts``; with ``svc`` (where the run
    is read from), its proposal card too."""

    # A longer final result is uploaded as a file (set from ``slack.result_file_chars``).
    result_file_chars: int = SlackSettings.model_fields["result_file_chars"].default

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        run_id: str = "",
        *,
        svc: Services | None = None,
        result_file_chars: int | None = None,
    ) -> None:
        self.client = client
        if result_file_chars is not None:
            self.result_file_chars = result_file_chars
        self.run_id = run_id
        self.svc = svc
        # The status message appears when the run starts (not while it is a proposal).
        self.started = False
        # Replaying events an earlier bot process relayed: fold them in, post nothing.
        self.quiet = False
        # Slack API calls made (to know when the relay's progress must be saved).
        self.calls = 0
        self.running = True
        self.channel = channel
        self.thread_ts = thread_ts
        self.names: dict[str, str] = {}
        self.status_ts: str | None = None
        self.status = "Starting…"
        self.shown = ""
        self.last_update = 0.0
        self.agents = 0
        self.finished = 0
        self.tools = 0

    async def _call(self, method: str, **kwargs: Any) -> Any:
        if self.quiet:
            return None
        self.calls += 1
        try:
            return await getattr(self.client, method)(channel=self.channel, **kwargs)
        except Exception:
            log.exception("slack %s failed; the relay goes on", method)
            return None

    async def reply(self, text: str) -> None:
        for piece in split(text):
            await self._call("chat_postMessage", thread_ts=self.thread_ts, text=piece)

    async def show_status(self, *, force: bool = False, interval_s: float = 1.0) -> None:
        line = (
            f"{self.status} · agents {self.finished}/{self.agents} done · tool calls {self.tools}"
        )
        if line == self.shown or not self.started or self.quiet:
            return
        if not force and time.monotonic() - self.last_update < interval_s:
            return
        self.shown, self.last_update = line, time.monotonic()
        blocks = status_blocks(line, self.run_id, running=self.running and bool(self.run_id))
        if self.status_ts is None:
            resp = await self._call(
                "chat_postMessage", thread_ts=self.thread_ts, text=line, blocks=blocks
            )
            self.status_ts = resp["ts"] if resp is not None else None
        else:
            await self._call("chat_update", ts=self.status_ts, text=line, blocks=blocks)

    def _who(self, agent_id: str | None) -> str:
        return escape(self.names.get(agent_id or "", agent_id or "the run"))

    async def on_event(self, event: RunEvent) -> None:
        """Fold one event into the status line; post it if it is a milestone."""
        match event:
            case RunStarted():
                self.started = True
                await self.show_status(force=True)
            case RunStatusChanged(status=RunStatus.PROPOSED):
                await self.post_card()
            case AgentCreated():
                self.names[event.agent_id or ""] = event.name
                self.agents += 1
                self.status = f"Running: {escape(event.name)} joined"
            case ToolCalled():
                self.tools += 1
                self.status = f"Running: {self._who(event.agent_id)} used `{event.tool}`"
            case AgentFinished():
                self.finished += 1
                self.status = f"Running: {self._who(event.agent_id)} {event.reason.value}"
                if event.agent_id and event.result and self.agents > 1:
                    await self.reply(
                        f"*{self._who(event.agent_id)}* {event.reason.value}:\n"
                        f"{escape(event.result)}"
                    )
            case ErrorRaised():
                await self.reply(f":warning: {escape(event.message)}")
            case QuestionAsked():
                await self.reply(
                    f":question: *{self._who(event.agent_id)}* asks: {escape(event.question)}"
                )
            case ChatPosted():
                await self.reply(f"*{self._who(event.agent_id)}*:\n{escape(event.text)}")
            case RunFinished(status=RunStatus.REJECTED):
                self.running = False  # the card says who rejected it
            case RunFinished():
                self.running = False
                self.status = f"Run {event.status.value} · {event.tokens} tokens · " + (
                    f"${event.cost_usd:.4f}"
                )
                await self.post_result(event)
            case _:
                pass

    async def post_card(self) -> None:
        """The proposal card (planning produced a cohort), from the run as stored; if it
        cannot be posted, the thread says so."""
        if self.svc is None or self.quiet:
            return
        self.calls += 1
        try:
            card = view(self.svc.settings, await self.svc.store.get_run(self.run_id))
            await self.client.chat_postMessage(
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=fallback_text(card),
                blocks=proposal_blocks(card),
            )
        except Exception:
            log.exception("posting the proposal of %s failed", self.run_id)
            await self.reply(":x: I could not post the proposal here; ask me again.")

    async def post_result(self, event: RunFinished) -> None:
        """The result (or why the run failed) in the thread; a long one as a file with a
        preview. The last message has buttons to rate a run that completed or failed."""
        ok = event.status is RunStatus.COMPLETED
        body = event.result if ok else (event.error or event.status.value)
        text = ("" if ok else ":x: ") + escape(body or "(no result)")
        pieces = split(text)
        if ok and event.result and len(event.result) > self.result_file_chars:
            file = result_file(self.run_id, event.result)
            if await self._call("files_upload_v2", thread_ts=self.thread_ts, **file) is not None:
                pieces = [preview(text)]
        rateable = event.status in (RunStatus.COMPLETED, RunStatus.FAILED) and self.run_id
        *head, last = pieces
        for piece in head:
            await self._call("chat_postMessage", thread_ts=self.thread_ts, text=piece)
        extra = {"blocks": result_blocks(last, self.run_id)} if rateable else {}
        await self._call("chat_postMessage", thread_ts=self.thread_ts, text=last, **extra)


class Busy:
    """Runs whose relay is posting an event right now; ``idle`` is set when there are none
    (a stopping bot waits for it, so no relay stops halfway through an event)."""

    def __init__(self) -> None:
        self.runs: set[str] = set()
        self.idle = asyncio.Event()
        self.idle.set()

    def add(self, run_id: str) -> None:
        self.runs.add(run_id)
        self.idle.clear()

    def discard(self, run_id: str) -> None:
        self.runs.discard(run_id)
        if not self.runs:
            self.idle.set()


async def relay_run(
    svc: Services,
    hub: EventHub,
    threads: Threads,
    client: AsyncWebClient,
    shown: Shown,
    busy: Busy | None = None,
) -> None:
    """Follow ``shown.run_id`` from its request to its end, relaying into its thread
    (the proposal card included).

    Events up to ``shown.last`` were relayed before (by a bot process that stopped): they
    only rebuild the relay's state. Progress is saved after every event that posted
    something; while an event is being relayed, the run id is in ``busy`` (a stopping
    bot waits for it).
    """
    busy = Busy() if busy is None else busy
    slack = svc.settings.slack
    relay = ThreadRelay(
        client,
        shown.channel,
        shown.thread,
        shown.run_id,
        svc=svc,
        result_file_chars=slack.result_file_chars,
    )
    relay.status_ts = shown.status_ts
    interval = slack.status_interval_s
    try:
        async for entry_id, event in hub.follow(shown.run_id):
            busy.add(shown.run_id)
            try:
                relay.quiet, calls = not after(entry_id, shown.last), relay.calls
                await relay.on_event(event)
                await relay.show_status(interval_s=interval)
                # Saved when something was posted: replaying an event that posted nothing
                # posts nothing either (a status update at most).
                if relay.calls != calls:
                    progress = {"last": entry_id, "status_ts": relay.status_ts}
                    shown = shown.model_copy(update=progress)
                    await threads.save(shown)
            finally:
                busy.discard(shown.run_id)
    except Exception:
        # Not marked done: the bot takes the run up again from the last event relayed.
        log.exception("following run %s failed; it will be taken up again", shown.run_id)
        return
    relay.quiet = False
    await relay.show_status(force=True)
    await threads.done(shown.run_id)
