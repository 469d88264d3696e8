"""A local HTTP fake of the Slack Web API methods the bot calls; records every call.

Point ``AsyncWebClient(base_url=fake.url)`` at it. The SDK posts JSON for calls with
blocks and form data for the others; both are decoded into ``Call.args``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_USER = "UBOT"


@dataclass
class Call:
    method: str
    args: dict[str, Any]


@dataclass
class FakeSlackAPI:
    calls: list[Call] = field(default_factory=list)
    # Methods that answer ``ok: false`` (the relay must survive them).
    failing: set[str] = field(default_factory=set)
    url: str = ""
    # Socket Mode: envelopes to send to the connected app, and the app's acks.
    envelopes: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self) -> FakeSlackAPI:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/link", self._socket)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/api/"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        # Some SDK methods send their arguments in the query string.
        args = dict(request.query) | args
        for key in ("blocks", "attachments"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        self.calls.append(Call(method, args))
        if method in self.failing:
            return web.json_response({"ok": False, "error": "fatal_error"})
        body: dict[str, Any] = {"ok": True}
        if method == "auth.test":
            body |= {"user_id": BOT_USER, "bot_id": "BBOT", "team_id": "T1", "user": "caramba"}
        elif method in ("chat.postMessage", "chat.update"):
            ts = args.get("ts") or f"{int(time.time())}.{next(self._ts):06d}"
            body |= {"channel": args.get("channel"), "ts": ts, "message": {"ts": ts}}
        elif method == "apps.connections.open":
            body |= {"url": self.url.replace("http://", "ws://").replace("/api/", "/link")}
        elif method == "chat.postEphemeral":
            body |= {"message_ts": f"{int(time.time())}.{next(self._ts):06d}"}
        return web.json_response(body)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: hello, then each queued envelope; the app's acks are recorded."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))

        async def pump() -> None:
            while True:
                await ws.send_str(json.dumps(await self.envelopes.get()))

        sender = asyncio.create_task(pump())
        try:
            async for msg in ws:
                self.socket_acks.append(json.loads(msg.data))
        finally:
            sender.cancel()
        return ws

    def of(self, method: str) -> list[dict[str, Any]]:
        return [c.args for c in self.calls if c.method == method]

    async def wait_for(self, predicate: Any, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(
                    "timed out; calls were: " + ", ".join(c.method for c in self.calls)
                )
            await asyncio.sleep(0.02)
