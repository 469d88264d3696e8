"""A run's progress in its Slack thread: one status message updated in place (at most
about once per ``slack.status_interval_s``), milestone replies, the final result.

An API error is logged and the relay goes on: it ends only with the run.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import status_blocks
from bots.slack.text import escape, split
from core.runs import follow_events
from core.runtime import Services
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ChatPosted,
    ErrorRaised,
    QuestionAsked,
    RunEvent,
    RunFinished,
    ToolCalled,
)
from core.types.run import RunStatus

log = logging.getLogger(__name__)


class ThreadRelay:
    """Posts one run's events into ``channel``/``thread_ts``."""

    def __init__(
        self, client: AsyncWebClient, channel: str, thread_ts: str, run_id: str = ""
    ) -> None:
        self.client = client
        self.run_id = run_id
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
        if line == self.shown:
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
            case RunFinished():
                self.running = False
                self.status = f"Run {event.status.value} · {event.tokens} tokens · " + (
                    f"${event.cost_usd:.4f}"
                )
                ok = event.status is RunStatus.COMPLETED
                body = event.result if ok else (event.error or event.status.value)
                await self.reply(("" if ok else ":x: ") + escape(body or "(no result)"))
            case _:
                pass


async def relay_run(
    svc: Services, client: AsyncWebClient, run_id: str, channel: str, thread_ts: str
) -> None:
    """Follow ``run_id`` to its end, relaying into the thread."""
    relay = ThreadRelay(client, channel, thread_ts, run_id)
    interval = svc.settings.slack.status_interval_s
    await relay.show_status(force=True)
    try:
        async for event in follow_events(svc, run_id):
            await relay.on_event(event)
            await relay.show_status(interval_s=interval)
    except Exception:
        log.exception("following run %s failed", run_id)
    await relay.show_status(force=True)
