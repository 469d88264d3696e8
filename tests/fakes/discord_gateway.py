"""The fake Discord's gateway: one websocket per connected client, speaking gateway v10 in
JSON text frames (HELLO → IDENTIFY → READY + GUILD_CREATE, heartbeat ACKs, sequence
numbers, RESUME with replay, member chunks), with events filtered by the client's intents
as Discord filters them."""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSCloseCode, WSMsgType, web

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord

Json = dict[str, Any]
DISPATCH, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, REQUEST_MEMBERS = 0, 1, 2, 6, 7, 8
INVALID_SESSION, HELLO, HEARTBEAT_ACK, RESUMED = 9, 10, 11, "RESUMED"

# Intent bits and the events each one lets through (not listed: always sent).
GUILDS, GUILD_MEMBERS, GUILD_MESSAGES = 1 << 0, 1 << 1, 1 << 9
GUILD_MESSAGE_REACTIONS, MESSAGE_CONTENT = 1 << 10, 1 << 15
EVENT_INTENTS = {
    "CHANNEL_CREATE": GUILDS,
    "CHANNEL_UPDATE": GUILDS,
    "THREAD_CREATE": GUILDS,
    "THREAD_UPDATE": GUILDS,
    "GUILD_ROLE_CREATE": GUILDS,
    "GUILD_MEMBER_ADD": GUILD_MEMBERS,
    "GUILD_MEMBER_UPDATE": GUILD_MEMBERS,
    "MESSAGE_CREATE": GUILD_MESSAGES,
    "MESSAGE_UPDATE": GUILD_MESSAGES,
    "MESSAGE_DELETE": GUILD_MESSAGES,
    "MESSAGE_REACTION_ADD": GUILD_MESSAGE_REACTIONS,
    "MESSAGE_REACTION_REMOVE": GUILD_MESSAGE_REACTIONS,
}
CONTENT_KEYS = ("content", "embeds", "attachments", "components", "poll")


@dataclass
class Session:
    """One identified gateway session (kept after its socket closes, for RESUME)."""

    id: str
    intents: int
    seq: int = 0
    log: list[Json] = field(default_factory=list)
    ws: web.WebSocketResponse | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def connected(self) -> bool:
        return self.ws is not None and not self.ws.closed

    async def send(self, payload: Json) -> bool:
        ws = self.ws
        if ws is None or ws.closed:
            return False
        async with self.lock:
            # Text frames: discord.py decompresses only binary ones.
            await ws.send_str(json.dumps(payload))
        return True


def _visible(session: Session, event: str, data: Json, bot_id: str) -> Json | None:
    """The event as this session may see it, or None when its intents filter it out."""
    needed = EVENT_INTENTS.get(event)
    if needed is not None and not session.intents & needed:
        return None
    if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE") and not session.intents & MESSAGE_CONTENT:
        own = data.get("author", {}).get("id") == bot_id
        mentioned = any(u.get("id") == bot_id for u in data.get("mentions", []))
        if not own and not mentioned:
            data = {**data, **{k: ([] if k != "content" else "") for k in CONTENT_KEYS}}
            data.pop("poll", None)
    return data


def ready_event(fake: FakeDiscord, session_id: str, shard: list[int] | None = None) -> Json:
    """READY: the bot user, its application, the guild (unavailable until GUILD_CREATE)."""
    return {
        "v": 10,
        "user": {**fake.user_payload(fake.bot), "verified": True, "mfa_enabled": False},
        "guilds": [{"id": fake.guild_id, "unavailable": True}],
        "session_id": session_id,
        "session_type": "normal",
        "resume_gateway_url": f"{fake.base_url.replace('http', 'ws', 1)}/resume/",
        "application": {"id": fake.app_id, "flags": 0},
        "private_channels": [],
        "relationships": [],
        **({"shard": shard} if shard else {}),
    }


def guild_create_event(fake: FakeDiscord, intents: int) -> Json:
    # Without GUILD_MEMBERS Discord sends only the bot (and members in voice).
    everybody = bool(intents & GUILD_MEMBERS)
    members = [m for m in fake.member_payloads() if everybody or m["user"]["id"] == fake.bot.id]
    channels = [c for c in fake.channels.values() if c["type"] not in (11, 12)]
    threads = [c for c in fake.channels.values() if c["type"] in (11, 12)]
    return {
        "id": fake.guild_id,
        "name": "Caramba Test",
        "icon": None,
        "owner_id": next(iter(fake.people)),
        "unavailable": False,
        "large": False,
        "member_count": len(fake.people),
        "preferred_locale": "en-US",
        "features": [],
        "roles": list(fake.roles.values()),
        "emojis": [],
        "stickers": [],
        "channels": channels,
        "threads": threads,
        "members": members,
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "joined_at": fake.bot.joined_at,
        "premium_tier": 0,
        "system_channel_id": None,
    }


class Gateway:
    """The websocket side of the fake; ``FakeDiscord.dispatch`` sends through it."""

    def __init__(self, fake: FakeDiscord, heartbeat_interval_ms: int = 41250) -> None:
        self.fake = fake
        self.heartbeat_interval_ms = heartbeat_interval_ms
        # Resumable sessions (a client's clean close, code 1000, ends its session); events
        # are logged for each, sent while its socket is open and replayed on RESUME.
        self.sessions: dict[str, Session] = {}
        # What each connection asked for: path and query (v, encoding, compress).
        self.connections: list[tuple[str, dict[str, str]]] = []
        self.identifies: list[Json] = []
        self.resumes: list[Json] = []
        self.heartbeats = 0
        self._sockets: set[web.WebSocketResponse] = set()
        self._dropped: set[web.WebSocketResponse] = set()

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self.connections.append((request.path, dict(request.query)))
        self._sockets.add(ws)
        await ws.send_str(
            json.dumps(self._frame(HELLO, {"heartbeat_interval": self.heartbeat_interval_ms}))
        )
        session: Session | None = None
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                session = await self._on_frame(ws, payload, session)
        finally:
            self._sockets.discard(ws)
            # A client's own clean close (code 1000) ends its session; a drop does not.
            dropped = ws in self._dropped
            if session is not None and not dropped and ws.close_code == 1000 and session.ws is ws:
                self.sessions.pop(session.id, None)
        return ws

    async def _on_frame(
        self, ws: web.WebSocketResponse, payload: Json, session: Session | None
    ) -> Session | None:
        op, raw = payload.get("op"), payload.get("d")
        data: Json = raw if isinstance(raw, dict) else {}
        if op == HEARTBEAT:
            self.heartbeats += 1
            await ws.send_str(json.dumps(self._frame(HEARTBEAT_ACK, None)))
        elif op == IDENTIFY:
            self.identifies.append(data)
            if data.get("token") != self.fake.token:
                await ws.close(code=4004, message=b"Authentication failed.")
                return None
            session = Session(id=secrets.token_hex(16), intents=int(data.get("intents", 0)), ws=ws)
            self.sessions[session.id] = session
            await self._send(
                session, "READY", ready_event(self.fake, session.id, data.get("shard"))
            )
            await self._send(
                session, "GUILD_CREATE", guild_create_event(self.fake, session.intents)
            )
        elif op == RESUME:
            self.resumes.append(data)
            old = self.sessions.get(data.get("session_id", ""))
            if old is None or data.get("token") != self.fake.token:
                await ws.send_str(json.dumps(self._frame(INVALID_SESSION, False)))
                return None
            old.ws = ws
            for event in [e for e in old.log if e["s"] > int(data.get("seq") or 0)]:
                await old.send(event)
            await self._send(old, RESUMED, {})
            session = old
        elif op == REQUEST_MEMBERS and session is not None:
            chunk = {
                "guild_id": self.fake.guild_id,
                "members": self.fake.member_payloads(),
                "chunk_index": 0,
                "chunk_count": 1,
                "not_found": [],
                "nonce": data.get("nonce"),
            }
            await self._send(session, "GUILD_MEMBERS_CHUNK", chunk)
        return session

    def _frame(self, op: int, data: Any, event: str | None = None, seq: int | None = None) -> Json:
        return {"op": op, "d": data, "s": seq, "t": event}

    async def _send(self, session: Session, event: str, data: Json) -> bool:
        session.seq += 1
        frame = self._frame(DISPATCH, data, event, session.seq)
        session.log.append(frame)
        return await session.send(frame)

    async def dispatch(self, event: str, data: Json) -> int:
        """Send ``event`` to every session whose intents allow it (kept for the
        disconnected ones, to replay on RESUME); how many connected clients got it."""
        sent = 0
        for session in list(self.sessions.values()):
            visible = _visible(session, event, data, self.fake.bot.id)
            if visible is not None and await self._send(session, event, visible):
                sent += 1
        return sent

    def connected(self) -> int:
        """How many sessions have an open socket."""
        return sum(session.connected for session in self.sessions.values())

    async def disconnect(self, code: int = 4000) -> None:
        """Close every socket (4000: the client resumes at ``resume_gateway_url``)."""
        for ws in list(self._sockets):
            self._dropped.add(ws)
            await ws.close(code=code, message=b"fake disconnect")

    async def reconnect(self) -> None:
        """Op 7 RECONNECT to every live session, as Discord asks before moving a client."""
        for session in list(self.sessions.values()):
            await session.send(self._frame(RECONNECT, None))

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY)
