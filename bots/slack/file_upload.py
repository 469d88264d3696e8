"""Uploading files of a run's workspace into its thread, once.

Slack's upload takes three steps: ``files.getUploadURLExternal`` (a file id and an upload
URL per file), the bytes posted to that URL, and ``files.completeUploadExternal``, which
shares the files in the thread as one message (images shown inline). The courier may try
an entry again (Slack unreachable, or its answer lost) and another bot process may take
the run over halfway, so every step's outcome is kept in Redis under the entry
(``…:slack:outbox:{run}:upload:{entry id}``, the key of ``Files``):

- a file whose bytes went up keeps its file id, and is not sent again;
- the completion is marked before it is asked for; a try after a marked completion asks
  ``files.info`` whether the first file is shared in the channel already, and if so the
  upload is done: a completion whose answer was lost is not repeated. (Slack shares a
  file within moments of the completion, so a try right after one whose answer was lost
  may not see it yet and completes the same file ids again: the same files, never new
  copies of them.)
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.outbox import Outbox
from bots.chat.ports import Files, Place
from bots.slack.failures import classify
from core.workspace.base import Workspace

log = logging.getLogger(__name__)
_UPLOAD_TIMEOUT_S = 120


class FileSender:
    """Sends a run's :class:`Files` with ``client``, keeping its progress beside the
    run's ``outbox``; reads the bytes from ``workspace``."""

    def __init__(
        self, outbox: Outbox, client: AsyncWebClient, workspace: Workspace, keep_s: float
    ) -> None:
        self.chat, self.client, self.workspace = outbox.store, client, workspace
        # How long an upload's progress is kept (it outlives the entry's last try).
        self.keep_s = max(60, int(keep_s) + 3600)

    def _key(self, files: Files) -> str:
        return self.chat.keys.upload(files.run, files.key)

    async def send(self, entry: Files, place: Place) -> dict[str, Any]:
        """Upload ``entry.files`` into ``place`` unless done before; what Slack answered
        (or a note that it was done before)."""
        channel, thread = place.channel, place.thread
        key = self._key(entry)
        state = await self.chat.progress(key)
        if state.get("done"):
            return {"ok": True, "done_before": True}
        ids = [await self._put(key, state, i, entry) for i in range(len(entry.files))]
        if state.get("completing") and await self._shared(ids[0], channel):
            log.info("run %s: the output files were shared before; not again", entry.run)
            await self._mark(key, "done")
            return {"ok": True, "done_before": True}
        await self._mark(key, "completing")
        answer = await self.client.files_completeUploadExternal(
            files=[{"id": fid, "title": f.title} for fid, f in zip(ids, entry.files, strict=True)],
            channel_id=channel,
            thread_ts=thread,
            initial_comment=entry.comment or None,
        )
        await self._mark(key, "done")
        return dict(answer.data) if isinstance(answer.data, dict) else {"ok": True}

    async def forget(self, entry: Files) -> None:
        """Drop what is kept of ``entry``'s upload (it is delivered or given up)."""
        await self.chat.forget(self._key(entry))

    async def _put(self, key: str, state: dict[str, str], i: int, entry: Files) -> str:
        """File ``i``'s id, its bytes uploaded (now, or by an earlier try)."""
        field = f"file:{i}"
        if field in state:
            return state[field]
        out = entry.files[i]
        data = await self.workspace.read(entry.run, out.path)
        got = await self.client.files_getUploadURLExternal(filename=out.filename, length=len(data))
        await self._post(str(got["upload_url"]), data, out.filename)
        file_id = str(got["file_id"])
        await self.chat.keep(key, self.keep_s, {field: file_id})
        return file_id

    async def _post(self, url: str, data: bytes, filename: str) -> None:
        """The bytes to the upload URL (no token: the URL is the permission)."""
        timeout = aiohttp.ClientTimeout(total=_UPLOAD_TIMEOUT_S)
        session = self.client.session
        own = session is None or session.closed
        if own:
            session = aiohttp.ClientSession(trust_env=True)
        assert session is not None
        try:
            async with session.post(url, data=data, timeout=timeout) as resp:
                if resp.status != 200:
                    body = (await resp.text())[:200]
                    # As files_upload_v2 reports it (the courier tries it again).
                    raise SlackRequestError(
                        f"Failed to upload a file (status: {resp.status}, body: {body}, "
                        f"filename: {filename})"
                    )
        finally:
            if own:
                await session.close()

    async def _shared(self, file_id: str, channel: str) -> bool:
        """Whether Slack shows the file shared in ``channel`` already."""
        try:
            answer = await self.client.files_info(file=file_id)
        except Exception as exc:
            if classify(exc).retry:
                raise  # Slack out of reach: the courier tries again later
            # Refused (no files:read scope, say): Slack cannot tell; complete again.
            log.warning("files.info for %s refused (%s): completing again", file_id, exc)
            return False
        file = answer.get("file") or {}
        shares = file.get("shares") or {}
        return any(channel in (shares.get(kind) or {}) for kind in ("public", "private"))

    async def _mark(self, key: str, what: str) -> None:
        await self.chat.keep(key, self.keep_s, {what: "1"})
