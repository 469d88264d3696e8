"""The fake Discord's HTTP server: REST calls decoded (JSON, or multipart's
``payload_json`` plus the files' bytes), checked (``Authorization: Bot <token>``, injected
429s), answered by the handlers of ``discord_rest`` and recorded; the attachment CDN; the
gateway's websocket at ``/`` and ``/resume/``.

Answers are JSON with ``Content-Type`` exactly ``application/json`` (discord.py compares
the header to that string and reads anything else as text); a 429 carries
``retry_after``, ``Retry-After`` and ``Via`` (without ``Via`` discord.py takes a 429 for a
Cloudflare ban and raises instead of waiting).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import BodyPartReader, web

from tests.fakes.discord_records import Request, UploadedFile
from tests.fakes.discord_rest import API, ROUTES, Handler, unknown

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord

NO_AUTH_ROUTES = ("/interactions/", "/webhooks/")


async def _read_body(request: web.Request) -> tuple[Any, list[UploadedFile]]:
    if request.content_type.startswith("multipart/"):
        body: Any = None
        files: list[UploadedFile] = []
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            else:
                data = bytes(await part.read())
                files.append(
                    UploadedFile(
                        part.name or "", part.filename or "", part.headers.get("Content-Type"), data
                    )
                )
        return body, files
    raw = await request.read()
    return (json.loads(raw) if raw else None), []


def respond(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    if status == 204 or body is None:
        return web.Response(status=204, headers=headers)
    # Exactly "application/json": discord.py reads anything else as text.
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(status=status, body=json.dumps(body).encode(), headers=all_headers)


def serve(
    fake: FakeDiscord, route: str, handler: Handler
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        arrived = time.monotonic()
        body, files = await _read_body(request)
        path = request.path.removeprefix(API)
        rec = Request(
            route,
            request.method,
            path,
            dict(request.match_info),
            dict(request.query),
            body,
            files,
            arrived,
        )
        headers: dict[str, str] = {}
        needs_auth = not path.startswith(NO_AUTH_ROUTES)
        if needs_auth and request.headers.get("Authorization") != f"Bot {fake.token}":
            status, answer = 401, {"code": 0, "message": "401: Unauthorized"}
        elif (limited := fake.limiter.check(rec)) is not None:
            status, headers, answer = limited
        elif route in fake.forbidden:
            status, answer = 403, {"code": 50013, "message": "Missing Permissions"}
        else:
            status, answer = await handler(fake, rec)
            if status < 300:
                headers = fake.limiter.headers(rec)
        rec.status, rec.answer = status, answer
        await fake.record(rec)
        return respond(status, answer, headers)

    return handle


async def cdn(fake: FakeDiscord, request: web.Request) -> web.Response:
    """An attachment's bytes, only through its signed URL (as Discord's CDN)."""
    attachment_id = request.match_info["attachment_id"]
    found = fake.files.get(attachment_id)
    if found is None or not fake.signed(attachment_id, dict(request.query)):
        return web.Response(status=404, text="This content is no longer available.")
    data, content_type = found
    return web.Response(body=data, content_type=content_type or "application/octet-stream")


def build_app(fake: FakeDiscord) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    for method, path, name, handler in ROUTES:
        app.router.add_route(method, API + path, serve(fake, name, handler))
    app.router.add_route("*", API + "/{tail:.*}", serve(fake, "unknown", unknown))

    async def attachment(request: web.Request) -> web.Response:
        return await cdn(fake, request)

    app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", attachment)
    app.router.add_get("/", fake.gateway.handle)
    app.router.add_get("/resume/", fake.gateway.handle)
    return app
