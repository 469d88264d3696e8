"""The chat layer's calls into a Slack thread, with the Web API client: posts and updates
(``chat.postMessage`` / ``chat.update``), a text file (``files_upload_v2``), the run's
own files (``bots.slack.file_upload``, once), and what a failed call means."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.ports import Failure, Files, Payload, Place, TextFile
from bots.chat.streams import Streamed
from bots.slack.assistant import AssistantStatus
from bots.slack.failures import classify
from bots.slack.file_upload import FileSender
from bots.slack.mentions import People
from bots.slack.names import Names
from bots.slack.stream import SlackStreamer, StreamingUnsupported


def _blocks(payload: Payload) -> list[dict[str, object]] | None:
    # Slack's renderer gives a list of blocks, or (the status message) a dict of them
    # beside the assistant status; None: a plain post (the SDK leaves them out).
    if isinstance(payload, dict):
        payload = payload.get("blocks")
    return payload if isinstance(payload, list) else None


def _progress(payload: Payload) -> dict[str, Any] | None:
    # The status message's plan and tasks, for its progress stream.
    progress = payload.get("progress") if isinstance(payload, dict) else None
    return progress if isinstance(progress, dict) else None


class SlackTransport:
    """The chat layer's :class:`~bots.chat.ports.Transport` for Slack; with
    ``assistant``, the status message sets the thread's assistant status too; with
    ``streamer``, the result is streamed (``bots.chat.streams.Streamer``)."""

    def __init__(
        self,
        client: AsyncWebClient,
        files: FileSender,
        assistant: AssistantStatus | None = None,
        streamer: SlackStreamer | None = None,
    ) -> None:
        self.client, self.files, self.assistant = client, files, assistant
        self.streamer = streamer
        # Agents' mentions of people, as names (bots.slack.names).
        self.names = Names(People(client))

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        text, payload = await self.names.resolve(text), await self.names.resolve_payload(payload)
        streamed = await self._start_progress(place, payload)
        if streamed is not None:
            await self._status(place, payload)
            return streamed
        response = await self.client.chat_postMessage(
            channel=place.channel,
            thread_ts=place.thread or None,  # "": in the channel (its thread is gone)
            text=text,
            blocks=_blocks(payload),
        )
        await self._status(place, payload)
        return str(response["ts"])

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        text, payload = await self.names.resolve(text), await self.names.resolve_payload(payload)
        progress = _progress(payload)
        if self.streamer is not None and progress is not None:
            if await self.streamer.progress.update(place, message_id, progress):
                await self._status(place, payload)
                return
        await self.client.chat_update(
            channel=place.channel, ts=message_id, text=text, blocks=_blocks(payload)
        )
        await self._status(place, payload)

    async def _start_progress(self, place: Place, payload: Payload) -> str | None:
        """The status message as the run's progress stream (``bots.slack.progress``):
        its ts, or None where Slack will not stream (the status message is posted)."""
        progress = _progress(payload)
        if self.streamer is None or progress is None:
            return None
        try:
            return await self.streamer.start_progress(place, progress)
        except StreamingUnsupported:
            return None
        except SlackApiError as exc:
            if classify(exc).retry:
                raise
            return None

    async def _status(self, place: Place, payload: Payload) -> None:
        """The assistant status the status message carries (after the message: a post
        in the thread clears the status). Never raises: the message is delivered."""
        if self.assistant is not None and isinstance(payload, dict) and "assistant" in payload:
            await self.assistant.show(place, str(payload["assistant"]))

    async def upload(self, place: Place, file: TextFile) -> None:
        await self.client.files_upload_v2(
            channel=place.channel,
            thread_ts=place.thread or None,
            content=file.content,
            filename=file.filename,
            title=file.title,
            initial_comment=await self.names.resolve(file.comment) or None,
        )

    async def stream(self, place: Place, streamed: Streamed) -> str:
        """Stream the result (``bots.chat.streams.Streamer``; refused without a streamer)."""
        if self.streamer is None:
            raise StreamingUnsupported("no streamer")
        text = await self.names.resolve(streamed.text)
        return await self.streamer.stream(place, replace(streamed, text=text))

    async def abandon(self, place: Place, streamed: Streamed) -> None:
        if self.streamer is not None:
            await self.streamer.abandon(place, streamed)

    async def forget_stream(self, streamed: Streamed) -> None:
        if self.streamer is not None:
            await self.streamer.forget_stream(streamed)

    async def send_files(self, place: Place, files: Files) -> None:
        await self.files.send(files, place)

    async def forget_files(self, files: Files) -> None:
        await self.files.forget(files)

    def classify(self, exc: BaseException) -> Failure:
        return classify(exc)
