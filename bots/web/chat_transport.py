"""The web chat's "platform": each thread is a Redis stream of posts and edits
(``{prefix}:web:chat:{thread}``, in the chat layer's store ``bots.chat.store``), read back
by the chat page (folded into the messages as they now stand) and followed by its live
feed. Any web process can post into any thread and any can show it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bots.chat.ports import Failure, Files, Payload, Place, TextFile
from bots.chat.store import ChatStore
from core.types._base import new_id

THREAD_MAXLEN = 5000
THREAD_TTL_S = 7 * 86_400


@dataclass
class ChatMessage:
    id: str
    text: str
    payload: dict[str, Any]
    # When it was first posted (seconds since the epoch; from its stream entry's id).
    at: float = 0.0

    @property
    def kind(self) -> str:
        return str(self.payload.get("kind", "note"))


class WebTransport:
    """Posts into the web chat's threads, kept in its chat ``store``."""

    def __init__(self, store: ChatStore) -> None:
        self.store = store

    def thread_key(self, thread: str) -> str:
        return self.store.keys.chat(thread)

    async def _add(self, thread: str, fields: dict[str, str]) -> None:
        await self.store.append(self.thread_key(thread), fields, THREAD_MAXLEN, THREAD_TTL_S)

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        message_id = new_id("m")
        await self._add(place.thread, _fields("post", message_id, text, payload))
        return message_id

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        await self._add(place.thread, _fields("update", message_id, text, payload))

    async def upload(self, place: Place, file: TextFile) -> None:
        payload = {"kind": "file", "filename": file.filename, "content": file.content}
        await self.post(place, file.comment or file.title, payload)

    async def send_files(self, place: Place, files: Files) -> None:
        # Sent once per upload (the outbox entry's key), however often it is tried.
        if not await self.store.once(self.store.keys.files_sent(files.key), THREAD_TTL_S):
            return
        listed = [{"path": f.path, "filename": f.filename, "size": f.size} for f in files.files]
        payload = {"kind": "files", "run": files.run, "files": listed}
        await self.post(place, files.comment, payload)

    async def forget_files(self, files: Files) -> None:
        await self.store.forget(self.store.keys.files_sent(files.key))

    def classify(self, exc: BaseException) -> Failure:
        # Only Redis can fail here: worth another try.
        return Failure(retry=True, answered=False, why=f"{type(exc).__name__}: {exc}")

    async def messages(self, thread: str) -> tuple[list[ChatMessage], str]:
        """The thread's messages as they now stand, and the id of its last change."""
        entries = await self.store.entries(self.thread_key(thread))
        shown: dict[str, ChatMessage] = {}
        for entry_id, fields in entries:
            message = ChatMessage(fields["id"], fields["text"], json.loads(fields["payload"]))
            if fields["op"] == "post":
                message.at = int(entry_id.partition("-")[0]) / 1000
                shown[message.id] = message
            elif message.id in shown:
                message.at = shown[message.id].at
                shown[message.id] = message
        return list(shown.values()), entries[-1][0] if entries else "0-0"

    async def changed(self, thread: str, after: str) -> str | None:
        """The id of the thread's last change after ``after``, or None (no wait)."""
        last = await self.store.last_entry(self.thread_key(thread))
        return last if last is not None and last != after else None


def _fields(op: str, message_id: str, text: str, payload: Payload) -> dict[str, str]:
    return {"op": op, "id": message_id, "text": text, "payload": json.dumps(payload or {})}
