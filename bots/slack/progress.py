"""A run's progress as one streamed Slack message (``chat.startStream`` with a plan
title and one ``task_update`` chunk per agent: its state and its last action), then the
result appended to it and the stream stopped with the feedback buttons
(``bots.slack.stream``): the thread gets one message that fills in as the run goes.

The status message's payload (``bots.slack.render``) carries ``run``, ``plan`` and
``tasks`` beside its blocks; the transport starts the stream with them instead of
posting the status message, and appends the tasks that changed instead of editing it.
Where Slack refuses to stream (a workspace without the methods, a thread it will not
stream in), the transport posts the status message as before. The stream's ``ts``, its
tasks as last sent and whether it was stopped are kept in Redis under the run's outbox
(``…:slack:outbox:{run}:stream:progress``), so another bot process goes on with it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.models.messages.chunk import BlocksChunk, PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.ports import Place, StatusLine
from bots.chat.store import ChatStore
from bots.slack.blocks import status_blocks
from bots.slack.names import content
from bots.slack.text import truncate

PROGRESS = "progress"
# Slack shows task titles and details on one line each.
TITLE_CHARS, DETAIL_CHARS = 120, 250
Recipient = Callable[[str], Awaitable[tuple[str | None, str | None]]]


def plan_payload(s: StatusLine) -> dict[str, Any]:
    """What the stream needs of the status: the plan's title and one task per agent."""
    tasks = [
        {
            "id": t.agent_id or "run",
            "title": _line(t.name, TITLE_CHARS),
            "status": t.state,
            "details": _line(t.last, DETAIL_CHARS) or None,
        }
        for t in s.tasks
    ]
    return {"run": s.run_id, "plan": _title(s), "tasks": tasks, "cancel": s.running}


def _line(text: str, limit: int) -> str:
    # One line, escaped like every text Slack gets (no <!channel> from an agent's name).
    return truncate(content(" ".join(text.split())), limit)


def _title(s: StatusLine) -> str:
    if s.phase == "starting":
        return "Starting the agents"
    if s.phase == "ended":
        return "Done" if s.outcome == "completed" else f"Run {s.outcome}"
    return f"Working: {s.finished} of {s.agents} agents done"


def _chunks(payload: dict[str, Any], sent: dict[str, Any]) -> list[Any]:
    """The plan title if it changed, and the tasks that changed since ``sent``."""
    chunks: list[Any] = []
    if payload["plan"] != sent.get("plan"):
        chunks.append(PlanUpdateChunk(title=payload["plan"]))
    before = {t["id"]: t for t in sent.get("tasks", [])}
    for task in payload["tasks"]:
        if before.get(task["id"]) != task:
            chunks.append(TaskUpdateChunk(**{k: v for k, v in task.items() if v is not None}))
    return chunks


class ProgressStreams:
    """Runs' progress streams, with ``client``, kept in the Slack chat ``chat`` store for
    ``keep_s``; ``recipient`` names who asked for a run (Slack wants them in a channel)."""

    def __init__(
        self, client: AsyncWebClient, chat: ChatStore, recipient: Recipient, keep_s: int
    ) -> None:
        self.client, self.chat, self.recipient, self.keep_s = client, chat, recipient, keep_s

    def _opening(self, payload: dict[str, Any]) -> list[Any]:
        """The stream's first chunks: Cancel while the run can be cancelled (a click on
        it after the run ended is told so), the plan and its tasks."""
        chunks = _chunks(payload, {})
        if payload.get("cancel"):
            blocks = status_blocks("", payload["run"], running=True)[1:]
            chunks.insert(0, BlocksChunk(blocks=blocks))
        return chunks

    def key(self, run_id: str) -> str:
        return self.chat.keys.stream(run_id, PROGRESS)

    async def state(self, run_id: str) -> dict[str, Any]:
        kept = await self.chat.progress(self.key(run_id))
        sent = json.loads(kept.get("sent") or "{}")
        return {"ts": kept.get("ts"), "stopped": bool(kept.get("stopped")), "sent": sent}

    async def start(self, place: Place, payload: dict[str, Any]) -> str:
        """Start the run's stream with its plan and tasks; its ts. Raises SlackApiError."""
        user, team = await self.recipient(payload["run"])
        response = await self.client.chat_startStream(
            channel=place.channel,
            thread_ts=place.thread,
            recipient_user_id=user,
            recipient_team_id=team,
            task_display_mode="plan",
            chunks=self._opening(payload),
        )
        ts = str(response["ts"])
        await self._keep(payload["run"], ts=ts, sent=json.dumps(payload))
        return ts

    async def update(self, place: Place, ts: str, payload: dict[str, Any]) -> bool:
        """Append what changed to the run's stream if ``ts`` is it (True), else False; a
        stream already stopped takes nothing more."""
        state = await self.state(payload["run"])
        if state["ts"] != ts:
            return False
        chunks = _chunks(payload, state["sent"])
        if state["stopped"] or not chunks:
            return True
        await self.client.chat_appendStream(channel=place.channel, ts=ts, chunks=chunks)
        await self._keep(payload["run"], sent=json.dumps(payload))
        return True

    async def open_for(self, run_id: str) -> str | None:
        """The ts of the run's progress stream if it is still open (the result goes on
        in it), else None."""
        state = await self.state(run_id)
        return None if state["stopped"] else state["ts"]

    async def stopped(self, run_id: str) -> None:
        await self._keep(run_id, stopped=1)

    async def _keep(self, run_id: str, **fields: Any) -> None:
        await self.chat.keep(self.key(run_id), self.keep_s, fields)
