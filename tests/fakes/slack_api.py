"""A local HTTP fake of the Slack Web API methods the bot calls; records every call.

Point ``AsyncWebClient(base_url=fake.url)`` at it. The SDK posts JSON for calls with
blocks and form data for the others; both are decoded into ``Call.args``.

``files_upload_v2`` works against it: ``files.getUploadURLExternal`` hands out an upload
URL on the fake itself, the bytes posted there are kept in ``uploads`` (and recorded as a
call named ``upload``), ``files.completeUploadExternal`` answers with the files.
``rate_limit`` makes a method answer HTTP 429 with ``Retry-After`` for its next calls;
``refusing`` answers chosen calls ``ok: false``; with ``assistant`` False the threads are
not assistant threads (``assistant.threads.*``: status, title, prompts, are refused);
with ``streaming`` ``chat.startStream`` / ``appendStream`` / ``stopStream`` work
(``streams``, by ts: the markdown text, the plan and task chunks in order, the blocks
that ended it), else they are refused as by a workspace without them. ``go_down`` makes
Slack unreachable (connections refused, the open ones closed) or broken (HTTP 503 to every
call) until ``come_back``. ``losing`` does chosen calls and then answers HTTP 503 (the
answer lost on its way back), so a client that tries again repeats a call Slack has done.

Files people attach: ``host_file`` keeps bytes and returns the file object an event
carries (``url_private`` / ``url_private_download`` on the fake, served only with the bot
token, as files.slack.com does; without it, a sign-in page); ``files.info`` answers with
it. A completed upload is shared into its channel and thread (``files.info`` shows it in
``shares``, and ``shared`` lists every share).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_USER = "UBOT"
BOT_TOKEN = "xoxb-test"
# What Slack answers a call that needs an assistant thread, elsewhere.
NOT_ASSISTANT = "invalid_thread_ts"
SIGN_IN_PAGE = "<!DOCTYPE html><html><body>Sign in to Slack</body></html>"


@dataclass
class Call:
    method: str
    args: dict[str, Any]


@dataclass
class FakeSlackAPI:
    calls: list[Call] = field(default_factory=list)
    # Calls answered 503 while ``broken`` (not in ``calls``).
    failed: list[Call] = field(default_factory=list)
    # Methods that answer ``ok: false`` (the relay must survive them).
    failing: set[str] = field(default_factory=set)
    # (method, args) → the error to answer ``ok: false`` with, or None to answer as usual.
    refusing: Callable[[str, dict[str, Any]], str | None] | None = None
    # Every call answers HTTP 503 (an outage behind a reachable front end).
    broken: bool = False
    # Threads are assistant threads: their status can be set (else refused).
    assistant: bool = True
    # Streaming is offered (else refused: ``unknown_method``).
    streaming: bool = False
    # Streamed messages by ts: channel, thread_ts, text (so far), blocks, stopped.
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Method → how many more calls answer HTTP 429 (see ``rate_limit``).
    limited: dict[str, int] = field(default_factory=dict)
    retry_after_s: int = 0
    # Uploaded files by file id: their bytes and the filename asked for.
    uploads: dict[str, bytes] = field(default_factory=dict)
    filenames: dict[str, str] = field(default_factory=dict)
    # Completed uploads: (file id, channel, thread_ts, initial_comment), one per share.
    shared: list[tuple[str, str, str, str]] = field(default_factory=list)
    # Methods done and then answered HTTP 503, for their next calls (see ``losing``).
    lose: dict[str, int] = field(default_factory=dict)
    # Files people attached (``host_file``): file id → (file object, bytes).
    hosted: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)
    # People ``users.info`` knows: user id → the user object (profile, name, is_bot).
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    url: str = ""
    # Socket Mode: envelopes to send to the connected app, and the app's acks.
    envelopes: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self) -> FakeSlackAPI:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)  # files.info, as the SDK calls it
        app.router.add_get("/link", self._socket)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files-pri/{team_file}/{tail:.+}", self._download)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{self.port}/api/"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def go_down(self, how: str = "refused") -> None:
        """Slack out of reach: ``refused`` — nothing listens on the port any more (and
        the open connections are closed); ``5xx`` — every call answers HTTP 503."""
        if how == "5xx":
            self.broken = True
        else:
            await self.stop()

    async def come_back(self) -> None:
        """Slack answers again, on the same port."""
        self.broken = False
        if self._runner is None:
            await self.start()

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        # Some SDK methods send their arguments in the query string.
        args = dict(request.query) | args
        for key in ("blocks", "attachments", "files"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        if self.broken:
            self.failed.append(Call(method, args))
            return web.Response(status=503, text="<html>503 Service Unavailable</html>")
        self.calls.append(Call(method, args))
        if self.limited.get(method, 0) > 0:
            self.limited[method] -= 1
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(self.retry_after_s)},
            )
        if method in self.failing:
            return web.json_response({"ok": False, "error": "fatal_error"})
        if self.refusing is not None and (error := self.refusing(method, args)):
            return web.json_response({"ok": False, "error": error})
        body = self._answer(method, args)
        if self.lose.get(method, 0) > 0:
            self.lose[method] -= 1
            return web.Response(status=503, text="<html>503 Service Unavailable</html>")
        return web.json_response(body)

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """Do the call and return its answer."""
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
        elif method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):08d}"
            self.filenames[file_id] = args.get("filename", "")
            upload_url = self.url.replace("/api/", f"/upload/{file_id}")
            body |= {"upload_url": upload_url, "file_id": file_id}
        elif method == "files.completeUploadExternal":
            files = [
                {"id": f["id"], "title": f.get("title", ""), "name": self.filenames.get(f["id"])}
                for f in args.get("files", [])
            ]
            for f in files:
                share = (f["id"], args.get("channel_id", ""), args.get("thread_ts", ""))
                self.shared.append((*share, args.get("initial_comment", "")))
            body |= {"files": files}
        elif method == "files.info":
            body = self._file_info(args.get("file", ""))
        elif method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            body = self._stream(method, args)
        elif method.startswith("assistant.threads.") and not self.assistant:
            body = {"ok": False, "error": NOT_ASSISTANT}
        elif method == "users.info":
            user = self.users.get(args.get("user", ""))
            body = {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        return body

    def _stream(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if not self.streaming:
            return {"ok": False, "error": "unknown_method"}
        if method == "chat.startStream":
            ts = f"{int(time.time())}.{next(self._ts):06d}"
            self.streams[ts] = {
                "channel": args.get("channel"),
                "thread_ts": args.get("thread_ts"),
                "text": args.get("markdown_text", ""),
                "blocks": None,
                "stopped": False,
                "mode": args.get("task_display_mode"),
                "chunks": list(args.get("chunks") or []),
            }
            return {"ok": True, "channel": args.get("channel"), "ts": ts}
        stream = self.streams.get(args.get("ts", ""))
        if stream is None or stream["stopped"]:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        stream["text"] += args.get("markdown_text", "")
        stream["chunks"] += list(args.get("chunks") or [])
        if method == "chat.stopStream":
            stream["stopped"], stream["blocks"] = True, args.get("blocks")
        return {"ok": True, "channel": args.get("channel"), "ts": args["ts"]}

    def _file_info(self, file_id: str) -> dict[str, Any]:
        if file_id in self.hosted:
            return {"ok": True, "file": self.hosted[file_id][0]}
        if file_id not in self.filenames:
            return {"ok": False, "error": "file_not_found"}
        shares: dict[str, list[dict[str, str]]] = {}
        for fid, channel, thread, _ in self.shared:
            if fid == file_id:
                shares.setdefault(channel, []).append({"ts": "1.0", "thread_ts": thread})
        info = {"id": file_id, "name": self.filenames[file_id], "shares": {"public": shares}}
        return {"ok": True, "file": info}

    def losing(self, method: str, times: int = 1) -> None:
        """Do ``method``'s next ``times`` calls, then answer them HTTP 503."""
        self.lose[method] = times

    def host_file(
        self, name: str, data: bytes, mimetype: str = "text/csv", *, size: int | None = None
    ) -> dict[str, Any]:
        """Keep ``data`` as a file a person attached; the file object an event carries
        (``size`` may claim another size than the bytes have)."""
        file_id = f"F{next(self._ts):08d}"
        base = self.url.replace("/api/", f"/files-pri/T1-{file_id}/")
        file = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data) if size is None else size,
            "url_private": base + name,
            "url_private_download": base + "download/" + name,
        }
        self.hosted[file_id] = (file, data)
        return file

    async def _download(self, request: web.Request) -> web.Response:
        """A file's bytes, like files.slack.com: with the bot token only (else the
        sign-in page, with HTTP 200, as Slack answers)."""
        file_id = request.match_info["team_file"].split("-", 1)[-1]
        auth = request.headers.get("Authorization", "")
        self.calls.append(Call("download", {"file_id": file_id, "authorization": auth}))
        if self.broken:
            return web.Response(status=503, text="<html>503 Service Unavailable</html>")
        if auth != f"Bearer {BOT_TOKEN}" or file_id not in self.hosted:
            return web.Response(text=SIGN_IN_PAGE, content_type="text/html")
        file, data = self.hosted[file_id]
        return web.Response(body=data, content_type=file["mimetype"])

    async def _upload(self, request: web.Request) -> web.Response:
        """The upload URL: like files.slack.com, a plain-text answer to the posted bytes."""
        file_id = request.match_info["file_id"]
        data = await request.read()
        if self.broken:
            return web.Response(status=503, text="<html>503 Service Unavailable</html>")
        self.calls.append(Call("upload", {"file_id": file_id, "length": len(data)}))
        if "upload" in self.failing:
            return web.Response(status=500, text="upload failed", content_type="text/plain")
        self.uploads[file_id] = data
        return web.Response(text=f"OK - {len(data)}", content_type="text/plain")

    def rate_limit(self, method: str, times: int = 1, retry_after_s: int = 0) -> None:
        """Answer ``method`` with HTTP 429 and ``Retry-After`` for its next ``times`` calls
        (the SDK reads Retry-After as whole seconds and adds up to 1 s of jitter)."""
        self.limited[method] = times
        self.retry_after_s = retry_after_s

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
