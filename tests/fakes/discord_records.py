"""What the fake Discord records: people, uploaded files, REST calls, interactions."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import discord_payloads as p

Json = dict[str, Any]


@dataclass
class Person:
    id: str
    name: str
    bot: bool = False
    roles: list[str] = field(default_factory=list)  # role ids
    joined_at: str = field(default_factory=p.iso)


@dataclass
class UploadedFile:
    field: str  # files[0], files[1], ...
    filename: str
    content_type: str | None
    data: bytes


@dataclass
class Request:
    """One REST call as the fake received it, and how it answered."""

    route: str  # a name: create_message, edit_message, interaction_callback, ...
    method: str
    path: str  # below /api/v10
    params: dict[str, str]
    query: dict[str, str]
    body: Any  # the JSON body, or the multipart's payload_json
    files: list[UploadedFile]
    at: float  # time.monotonic() on arrival
    status: int = 0
    answer: Any = None

    @property
    def json(self) -> Json:
        """The body as a dict (``{}`` when it was none or a list)."""
        return self.body if isinstance(self.body, dict) else {}


@dataclass
class FakeInteraction:
    """An interaction the test sent, and what the bot answered to it."""

    id: str
    token: str
    type: int  # 2 application command, 3 component, 5 modal submit
    user_id: str
    channel_id: str
    message_id: str | None  # the message whose component was used
    payload: Json
    sent_at: float = 0.0
    acked_at: float | None = None
    callback_type: int | None = None  # 4 reply, 5 defer, 6 deferred update, 7 update, 9 modal
    callback: Request | None = None
    original_id: str | None = None  # the response message (4, 5) or the component's (6, 7)
    ephemeral: bool = False
    loading: bool = False  # deferred (5) and not yet followed up or edited
    followup_ids: list[str] = field(default_factory=list)
    acked: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def ack_ms(self) -> float | None:
        """Milliseconds from the INTERACTION_CREATE frame to the callback."""
        return None if self.acked_at is None else (self.acked_at - self.sent_at) * 1000
