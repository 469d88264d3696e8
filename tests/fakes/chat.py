"""An in-memory chat platform for the shared chat layer's tests: a plain-text renderer and
a transport into a :class:`Thread` that may fail on cue (no Slack, no Discord)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from bots.chat.ports import (
    Adapter,
    Failure,
    Files,
    Intention,
    Limits,
    Payload,
    Place,
    Rendered,
    TextFile,
)
from bots.chat.ports import Result as ResultIntention

LIMIT = 100


class Transient(Exception):
    """The platform is out of reach: worth another try."""


class Refused(Exception):
    """The platform refused the call itself."""


class PlainRenderer:
    """Every intention as one line of plain text naming its kind (split at ``LIMIT``)."""

    def escape(self, text: str) -> str:
        return text.replace("@", "@\u2060")

    def bold(self, name: str) -> str:
        return f"**{self.escape(name)}**"

    def split(self, text: str) -> list[str]:
        return [text[i : i + LIMIT] for i in range(0, len(text), LIMIT)] or [""]

    def render(self, intention: Intention) -> list[Rendered]:
        fields = {k: v for k, v in vars(intention).items() if k not in ("kind", "view")}
        if intention.kind in ("status", "card"):
            text = f"{intention.kind}: {fields}"
            return [Rendered(text[:LIMIT], {"kind": intention.kind})]
        text = f"{intention.kind}: {self.escape(str(getattr(intention, 'text', '')))}"
        pieces = self.split(text)
        if isinstance(intention, ResultIntention) and intention.file:
            pieces = [pieces[0][: LIMIT - 20] + f" (in {intention.file})"]
        buttons = isinstance(intention, ResultIntention) and intention.rateable
        return [
            Rendered(p, {"buttons": True} if buttons and i == len(pieces) - 1 else None)
            for i, p in enumerate(pieces)
        ]


@dataclass
class Thread:
    """What people see: messages by id, in the order they were posted, and every call."""

    messages: dict[str, str] = field(default_factory=dict)
    # Each message's payload and place, by id (a fallback posts plain text, or in the
    # channel outside the thread).
    payloads: dict[str, Payload] = field(default_factory=dict)
    places: dict[str, Place] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def texts(self) -> list[str]:
        return list(self.messages.values())


class FakeTransport:
    """Posts into ``thread``; ``failing`` holds the exceptions its next calls raise."""

    def __init__(self, thread: Thread) -> None:
        self.thread = thread
        self.failing: list[BaseException] = []

    def _call(self, what: str, text: str) -> None:
        self.thread.calls.append((what, text))
        if self.failing:
            raise self.failing.pop(0)

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        self._call("post", text)
        message_id = f"m{next(self.thread.ids)}"
        self.thread.messages[message_id] = text
        self.thread.payloads[message_id] = payload
        self.thread.places[message_id] = place
        return message_id

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        self._call("update", text)
        self.thread.messages[message_id] = text
        self.thread.payloads[message_id] = payload

    async def upload(self, place: Place, file: TextFile) -> None:
        self._call("upload", file.filename)
        self.thread.files.append(file.filename)

    async def send_files(self, place: Place, files: Files) -> None:
        self._call("files", files.key)
        self.thread.files.extend(f.filename for f in files.files)

    async def forget_files(self, files: Files) -> None:
        pass

    def classify(self, exc: BaseException) -> Failure:
        return Failure(retry=isinstance(exc, Transient), why=repr(exc))


def fake_adapter(thread: Thread, **limits: Any) -> tuple[Adapter, FakeTransport]:
    transport = FakeTransport(thread)
    limits = {"message_chars": LIMIT, "outbox_retry_max_s": 0.05, **limits}
    return Adapter("fake", "Fake", PlainRenderer(), transport, Limits(**limits)), transport
