"""A run's result streamed into its Slack thread (``bots.chat.streams``):
``chat.startStream`` with its first piece, ``chat.appendStream`` for each further one,
``chat.stopStream`` with the feedback buttons.

Progress is kept in Redis under the outbox entry (``…:slack:outbox:{run}:stream:{entry
id}``: the message's ``ts``, how many characters reached it, ``done``), written after each
call Slack took, so the courier's next try after Slack went away (or after a crash, by
another bot process) goes on with the next piece: the text arrives once, in order. A
call whose answer was lost on its way back is the one exception: its piece may be sent
again. Slack refusing (not an assistant thread, streaming not offered, a stream it ended
itself) makes the courier post the result as usual instead, after :meth:`abandon`
deleted what was streamed; a workspace without the methods at all is remembered by the
process, which stops trying.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.outbox import Outbox
from bots.chat.ports import Place, Rendered, Result
from bots.chat.store import ChatStore
from bots.chat.streams import Streamed
from bots.slack.blocks import feedback_block
from bots.slack.names import content
from bots.slack.progress import ProgressStreams
from bots.slack.schedules import repeat_block

log = logging.getLogger(__name__)
# Characters per call (Slack takes 12,000): a result shows up in a few steps.
CHUNK_CHARS = 2000
# Answers that say the workspace (or the bot's token) has no streaming at all.
UNSUPPORTED = frozenset({"unknown_method", "not_allowed_token_type", "method_deprecated"})
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


class StreamingUnsupported(Exception):
    """This workspace has no streaming (the courier posts the result instead)."""


def streamed_message(r: Result) -> Rendered:
    """The result as one message to stream: its text as markdown (escaped: no mention or
    link comes from it) and, for a rateable run, the feedback buttons that end it."""
    # The feedback buttons and "Run this every…" (bots.slack.schedules).
    buttons = [feedback_block(r.run_id).to_dict(), repeat_block(r.run_id)] if r.rateable else None
    return Rendered(content(r.text), buttons)


class SlackStreamer:
    """Streams with ``client``, its progress in the Slack chat ``chat`` store (beside the
    run's outbox) for ``keep_s``; ``store`` says who asked for a run (the recipient Slack
    wants when streaming into a channel)."""

    def __init__(
        self,
        client: AsyncWebClient,
        chat: ChatStore,
        store: Any,
        keep_s: float,
        chunk_chars: int = CHUNK_CHARS,
    ) -> None:
        self.client, self.chat, self.store = client, chat, store
        self.keep_s = max(60, int(keep_s) + 3600)
        self.chunk_chars = chunk_chars
        self.unsupported = False
        self.team: str | None = None
        # The runs' progress streams: a result goes on in its run's open one.
        self.progress = ProgressStreams(client, chat, self._recipient, self.keep_s)

    def _key(self, streamed: Streamed) -> str:
        return self.chat.keys.stream(streamed.run, streamed.key)

    async def stream(self, place: Place, streamed: Streamed) -> str:
        key, text, n = self._key(streamed), streamed.text, self.chunk_chars
        state = await self.chat.progress(key)
        ts, sent = state.get("ts"), int(state.get("sent", 0))
        if state.get("done") and ts:
            return ts
        if not ts and (ts := await self.progress.open_for(streamed.run)):
            await self._catch_up(place, streamed.run, ts)
            await self._keep(key, ts=ts, sent=0)  # under the run's progress
        if not ts:
            if self.unsupported:
                raise StreamingUnsupported("this workspace does not stream")
            ts = await self._start(place, streamed, text[:n])
            sent = len(text[:n])
            await self._keep(key, ts=ts, sent=sent)
        while sent < len(text):
            piece = text[sent : sent + n]
            await self.client.chat_appendStream(channel=place.channel, ts=ts, markdown_text=piece)
            sent += len(piece)
            await self._keep(key, sent=sent)
        blocks = streamed.payload if isinstance(streamed.payload, list) else None
        await self.client.chat_stopStream(channel=place.channel, ts=ts, blocks=blocks)
        await self._keep(key, done=1)
        await self.progress.stopped(streamed.run)
        return ts

    async def _catch_up(self, place: Place, run_id: str, ts: str) -> None:
        """The run's latest status (its tasks as they ended) into its progress stream
        before the result goes on in it: the courier may deliver the result first."""
        latest = (await Outbox(self.chat).head(run_id)).status.payload
        progress = latest.get("progress") if isinstance(latest, dict) else None
        if isinstance(progress, dict):
            await self.progress.update(place, ts, progress)

    async def _start(self, place: Place, streamed: Streamed, first: str) -> str:
        user, team = await self._recipient(streamed.run)
        try:
            response = await self.client.chat_startStream(
                channel=place.channel,
                thread_ts=place.thread,
                markdown_text=first,
                recipient_user_id=user,
                recipient_team_id=team,
            )
        except SlackApiError as exc:
            self.refused(exc)
            raise
        return str(response["ts"])

    def refused(self, exc: SlackApiError) -> None:
        """Remember a workspace that has no streaming at all (``exc`` says so)."""
        error = exc.response.data.get("error") if isinstance(exc.response.data, dict) else ""
        if error in UNSUPPORTED:
            self.unsupported = True
            log.info("this Slack workspace does not stream (%s): the thread gets posts", error)

    async def start_progress(self, place: Place, payload: dict[str, Any]) -> str:
        """Start a run's progress stream (``bots.slack.progress``); refused like a
        result's stream (StreamingUnsupported once the workspace said it has none)."""
        if self.unsupported:
            raise StreamingUnsupported("this workspace does not stream")
        try:
            return await self.progress.start(place, payload)
        except SlackApiError as exc:
            self.refused(exc)
            raise

    async def _recipient(self, run_id: str) -> tuple[str | None, str | None]:
        """Who the stream is for, and their team: in a channel Slack wants the person who
        asked (none for a run not asked for by a Slack user)."""
        try:
            user = (await self.store.get_run(run_id)).requested_by
        except Exception as exc:
            log.debug("no recipient for the stream of %s (%s)", run_id, exc)
            return None, None
        if not _USER_ID.fullmatch(user or ""):
            return None, None
        if self.team is None:  # a failure is the stream's: tried again, or refused
            self.team = str((await self.client.auth_test()).get("team_id") or "")
        return user, self.team or None

    async def _keep(self, key: str, **fields: Any) -> None:
        await self.chat.keep(key, self.keep_s, fields)

    async def abandon(self, place: Place, streamed: Streamed) -> None:
        key = self._key(streamed)
        try:
            ts = (await self.chat.progress(key)).get("ts")
            if ts:
                await self.client.chat_delete(channel=place.channel, ts=ts)
        except Exception as exc:
            log.warning("could not remove the stream of %s (%s)", streamed.run, exc)
        await self.forget_stream(streamed)

    async def forget_stream(self, streamed: Streamed) -> None:
        try:
            await self.chat.forget(self._key(streamed))
        except Exception:
            log.warning("could not drop the stream progress of %s", streamed.run)
