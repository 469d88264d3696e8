"""A run's progress in its Slack thread: the proposal card once planning produced a
cohort, one status message updated in place (at most about once per
``slack.status_interval_s``), milestone replies, the final result.

The relay never calls Slack: what it posts goes into the run's outbox in Redis
(``bots.slack.outbox``), in the transaction that saves how far it got, and the run's
courier (``bots.slack.courier``) delivers it. Reading the run's events never waits for
Slack, and nothing is lost while Slack is unreachable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import fallback_text, proposal_blocks, result_blocks, status_blocks
from bots.slack.courier import Busy, Courier, stop_if_cancelled
from bots.slack.file_upload import FileSender
from bots.slack.outbox import Entry, Outbox
from bots.slack.outputs import queue_outputs
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
NO_CARD = ":x: I could not post the proposal here; ask me again."


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


class ThreadRelay:
    """Folds one run's events into what to post into ``channel``/``thread_ts``: entries
    for its outbox and the status message's content (taken with :meth:`take`); with
    ``svc`` (where the run is read from), its proposal card too."""

    # A longer final result is uploaded as a file (set from ``slack.result_file_chars``).
    result_file_chars: int = SlackSettings.model_fields["result_file_chars"].default

    def __init__(
        self,
        channel: str,
        thread_ts: str,
        run_id: str = "",
        *,
        svc: Services | None = None,
        result_file_chars: int | None = None,
    ) -> None:
        if result_file_chars is not None:
            self.result_file_chars = result_file_chars
        self.run_id = run_id
        self.svc = svc
        # The status message appears when the run starts (not while it is a proposal).
        self.started = False
        # Replaying events an earlier bot process relayed: fold them in, post nothing.
        self.quiet = False
        self.running = True
        self.channel = channel
        self.thread_ts = thread_ts
        self.names: dict[str, str] = {}
        self.status = "Starting…"
        self.shown = ""
        self.last_update = 0.0
        self.agents = 0
        self.finished = 0
        self.tools = 0
        # Queued since the last take(): posts, and the status message's new content.
        self.out: list[Entry] = []
        self.new_status: tuple[str, list[dict[str, Any]]] | None = None

    def take(self) -> tuple[list[Entry], tuple[str, list[dict[str, Any]]] | None]:
        """What to add to the outbox, and forget it here."""
        out, status = self.out, self.new_status
        self.out, self.new_status = [], None
        return out, status

    def _entry(self, what: str, text: str, blocks: list[Block] | None = None) -> Entry:
        return Entry(
            run=self.run_id, what=what, text=text, blocks=None if blocks is None else _dicts(blocks)
        )

    def reply(self, text: str, what: str = "reply") -> None:
        if not self.quiet:
            self.out.extend(self._entry(what, piece) for piece in split(text))

    def show_status(self, *, force: bool = False, interval_s: float = 1.0) -> None:
        line = (
            f"{self.status} · agents {self.finished}/{self.agents} done · tool calls {self.tools}"
        )
        if line == self.shown or not self.started or self.quiet:
            return
        if not force and time.monotonic() - self.last_update < interval_s:
            return
        self.shown, self.last_update = line, time.monotonic()
        blocks = status_blocks(line, self.run_id, running=self.running and bool(self.run_id))
        self.new_status = (line, _dicts(blocks))

    def _who(self, agent_id: str | None) -> str:
        return escape(self.names.get(agent_id or "", agent_id or "the run"))

    async def on_event(self, event: RunEvent) -> None:
        """Fold one event into the status line; queue it if it is a milestone."""
        match event:
            case RunStarted():
                self.started = True
                if not self.quiet:  # posted first: milestones come below it
                    self.out.append(Entry(run=self.run_id, what="status message", kind="status"))
                self.show_status(force=True)
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
                    self.reply(
                        f"*{self._who(event.agent_id)}* {event.reason.value}:\n"
                        f"{escape(event.result)}",
                        "milestone",
                    )
            case ErrorRaised():
                self.reply(f":warning: {escape(event.message)}", "error")
            case QuestionAsked():
                self.reply(
                    f":question: *{self._who(event.agent_id)}* asks: {escape(event.question)}",
                    "question",
                )
            case ChatPosted():
                self.reply(f"*{self._who(event.agent_id)}*:\n{escape(event.text)}", "chat post")
            case RunFinished(status=RunStatus.REJECTED):
                self.running = False  # the card says who rejected it
            case RunFinished():
                self.running = False
                self.status = f"Run {event.status.value} · {event.tokens} tokens · " + (
                    f"${event.cost_usd:.4f}"
                )
                await self.post_outputs(event)
                self.post_result(event)
            case _:
                pass

    async def post_card(self) -> None:
        """The proposal card (planning produced a cohort), from the run as stored; if it
        cannot be posted, the thread says so."""
        if self.svc is None or self.quiet:
            return
        sorry = self._entry("note that the proposal failed", NO_CARD)
        try:
            card = view(
                self.svc.settings, await self.svc.store.get_run(self.run_id), self.svc.tools
            )
            blocks = proposal_blocks(card)
        except Exception:
            log.exception("building the proposal of %s failed", self.run_id)
            self.out.append(sorry)
            return
        entry = self._entry("proposal card", fallback_text(card), blocks)
        self.out.append(entry.model_copy(update={"instead": (sorry,)}))

    async def post_outputs(self, event: RunFinished) -> None:
        """The files the agents left under outputs/, uploaded above the result."""
        if self.svc is not None and not self.quiet and event.status is not RunStatus.CANCELLED:
            self.out.extend(await queue_outputs(self.svc, self.run_id))

    def post_result(self, event: RunFinished) -> None:
        """The result (or why the run failed) in the thread; a long one as a file with a
        preview (or, if the file cannot be uploaded, in pieces). The last message has
        buttons to rate a run that completed or failed."""
        if self.quiet:
            return
        ok = event.status is RunStatus.COMPLETED
        body = event.result if ok else (event.error or event.status.value)
        text = ("" if ok else ":x: ") + escape(body or "(no result)")
        rateable = event.status in (RunStatus.COMPLETED, RunStatus.FAILED) and self.run_id

        def posts(pieces: list[str]) -> list[Entry]:
            *head, last = pieces
            buttons = result_blocks(last, self.run_id) if rateable else None
            return [self._entry("result", p) for p in head] + [self._entry("result", last, buttons)]

        whole = posts(split(text))
        if ok and event.result and len(event.result) > self.result_file_chars:
            file = result_file(self.run_id, event.result)
            upload = Entry(
                run=self.run_id,
                what="result file",
                kind="upload",
                file=file,
                then=tuple(posts([preview(text)])),
                instead=tuple(whole),
            )
            self.out.append(upload)
        else:
            self.out.extend(whole)


async def relay_run(
    svc: Services,
    hub: EventHub,
    threads: Threads,
    outbox: Outbox,
    client: AsyncWebClient,
    shown: Shown,
    busy: Busy | None = None,
) -> None:
    """Follow ``shown.run_id`` from its request to its end, relaying into its thread
    (the proposal card included), and deliver its outbox until it is empty.

    Events up to ``shown.last`` were relayed before (by a bot process that stopped): they
    only rebuild the relay's state, while the courier delivers what that process left in
    the outbox. What an event posts is queued in the transaction that saves the relay's
    progress, so it is queued once. While an event is being queued, the run id is in
    ``busy`` (a stopping bot waits for it).
    """
    busy = Busy() if busy is None else busy
    slack, run_id = svc.settings.slack, shown.run_id
    relay = ThreadRelay(
        shown.channel, shown.thread, run_id, svc=svc, result_file_chars=slack.result_file_chars
    )
    files = FileSender(outbox, client, svc.workspace, slack.outbox_max_age_s)
    courier = Courier(outbox, client, run_id, shown.channel, shown.thread, slack, busy, files)
    if shown.status_ts:
        await outbox.keep_ts(run_id, shown.status_ts)

    async def commit(last: str) -> None:
        nonlocal shown
        entries, status = relay.take()
        if not entries and status is None:
            return  # a replayed event that posted nothing posts nothing either
        shown = shown.model_copy(update={"last": last})
        async with threads.redis.pipeline(transaction=True) as pipe:
            threads.saving(pipe, shown)
            outbox.add(pipe, run_id, entries, status)
            await pipe.execute()
        courier.wake.set()

    ended = asyncio.Event()
    delivering = asyncio.create_task(courier.run(ended), name=f"slack-outbox-{run_id}")
    try:
        try:
            async for entry_id, event in hub.follow(run_id):
                busy.add(run_id)
                try:
                    relay.quiet = not after(entry_id, shown.last)
                    await relay.on_event(event)
                    relay.show_status(interval_s=slack.status_interval_s)
                    await commit(entry_id)
                finally:
                    busy.discard(run_id)
                stop_if_cancelled()  # a cancel swallowed by Redis: not wait for the next event
            relay.quiet = False
            relay.show_status(force=True)
            await commit(shown.last)
        except Exception:
            # Not marked done: the bot takes the run up again from the last event queued.
            log.exception("following run %s failed; it will be taken up again", run_id)
            return
        ended.set()
        courier.wake.set()
        await delivering
        async with threads.redis.pipeline(transaction=True) as pipe:
            threads.forgetting(pipe, run_id)
            outbox.drop(pipe, run_id)
            await pipe.execute()
    finally:
        delivering.cancel()
        await asyncio.gather(delivering, return_exceptions=True)
