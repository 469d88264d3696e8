"""The web chat's "platform": each thread is a Redis stream of posts and edits
(``{prefix}:web:chat:{thread}``), read back by the chat page (folded into the messages as
they now stand) and followed by its live feed. Any web process can post into any thread
and any can show it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bots.chat.ports import Failure, Files, Payload, Place, TextFile
from core.types._base import new_id

THREAD_MAXLEN = 5000
THREAD_TTL_S = 7 * 86_400


@dataclass
class ChatMessage:
    id: str
    text: str
    payload: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.payload.get("kind", "note"))


class WebTransport:
    def __init__(self, redis: Any, key_prefix: str) -> None:
        self.redis = redis
        self.prefix = f"{key_prefix}:web"

    def thread_key(self, thread: str) -> str:
        return f"{self.prefix}:chat:{thread}"

    async def _add(self, thread: str, fields: dict[str, str]) -> None:
        key = self.thread_key(thread)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(key, fields, maxlen=THREAD_MAXLEN, approximate=True)
            pipe.expire(key, THREAD_TTL_S)
            await pipe.execute()

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
        sent = f"{self.prefix}:files-sent:{files.key}"
        if not await self.redis.set(sent, "1", nx=True, ex=THREAD_TTL_S):
            return
        listed = [{"path": f.path, "filename": f.filename, "size": f.size} for f in files.files]
        payload = {"kind": "files", "run": files.run, "files": listed}
        await self.post(place, files.comment, payload)

    async def forget_files(self, files: Files) -> None:
        await self.redis.delete(f"{self.prefix}:files-sent:{files.key}")

    def classify(self, exc: BaseException) -> Failure:
        # Only Redis can fail here: worth another try.
        return Failure(retry=True, answered=False, why=f"{type(exc).__name__}: {exc}")

    async def messages(self, thread: str) -> tuple[list[ChatMessage], str]:
        """The thread's messages as they now stand, and the id of its last change."""
        entries: Any = await self.redis.xrange(self.thread_key(thread))
        shown: dict[str, ChatMessage] = {}
        for _entry_id, fields in entries:
            message = ChatMessage(fields["id"], fields["text"], json.loads(fields["payload"]))
            if fields["op"] == "post" or message.id in shown:
                shown[message.id] = message
        return list(shown.values()), entries[-1][0] if entries else "0-0"

    async def changed(self, thread: str, after: str) -> str | None:
        """The id of the thread's last change after ``after``, or None (no wait)."""
        entries: Any = await self.redis.xrevrange(self.thread_key(thread), count=1)
        if entries and entries[0][0] != after:
            return str(entries[0][0])
        return None


def _fields(op: str, message_id: str, text: str, payload: Payload) -> dict[str, str]:
    return {"op": op, "id": message_id, "text": text, "payload": json.dumps(payload or {})}
