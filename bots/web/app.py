"""The inspector as one ASGI app (Starlette): the runs list, a run's page, its live
events (server-sent events) and its files. Pages are rendered on the server with Jinja2,
autoescaped: whatever agents or people wrote is shown as text, never as markup."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bots.web.access import Signer, run_path
from bots.web.chat import WebChat
from bots.web.chat_edit import edit_routes
from bots.web.chat_routes import chat_routes
from bots.web.chat_schedules import schedule_routes
from bots.web.forms import form_routes
from bots.web.guard import NEEDS_OPERATOR, HostGuard, allowed_hosts, is_local
from bots.web.live import Live
from bots.web.pretty import filters
from bots.web.runs import list_runs
from bots.web.spend import SpendSource, spend_routes
from bots.web.timeline import short, timeline_line
from bots.web.view import age, run_page
from core.config import Settings
from core.errors import RunError, WorkspaceError
from core.state.store import Store
from core.types.events import RunEvent
from core.types.figures import exact_cost, number
from core.workspace import Workspace

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
# The chat platforms whose relays say which channel shows a run.
PLATFORMS = ("slack", "discord", "web")
KEEPALIVE_S = 15.0
_FORBIDDEN = "This link is not valid or has expired. Ask for a new link in the run's thread."

Scope = MutableMapping[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


@dataclass
class Inspector:
    """What the app reads runs with."""

    settings: Settings
    store: Store
    workspace: Workspace
    signer: Signer
    live: Live
    # The runs list may be open without an operator's token (the server listens on
    # loopback); it is, for direct loopback requests naming a loopback host only.
    open_list: bool = False
    # Where the spend page reads a month's report (core.runs.spend.report); None: no page.
    spend: SpendSource | None = None


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("bots.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["age"] = age
    env.filters["short"] = short
    env.filters["money"] = exact_cost
    env.filters["num"] = number
    env.filters["clock"] = lambda at: time.strftime("%H:%M:%S", time.gmtime(at))
    env.filters["when"] = lambda at: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.filters["qpath"] = lambda v: quote(str(v), safe="/")
    env.filters.update(filters())
    return env


def create_app(inspector: Inspector, chat: WebChat | None = None) -> Starlette:
    env = templates()

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    def token(request: Request) -> str | None:
        return request.query_params.get("t")

    def forbidden() -> Response:
        return PlainTextResponse(_FORBIDDEN, status_code=403)

    async def runs(request: Request) -> Response:
        open_here = inspector.open_list and is_local(request.scope)
        if not (open_here or inspector.signer.is_operator(token(request))):
            return PlainTextResponse(NEEDS_OPERATOR, status_code=403)
        rows = await list_runs(inspector.store, inspector.settings.web_ui.runs_shown, PLATFORMS)
        ttl = inspector.settings.web_ui.link_ttl_s
        links = {row.id: run_path(inspector.signer, row.id, ttl) for row in rows}
        return page("runs.html", rows=rows, links=links, nav=True, t=token(request) or "")

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not inspector.signer.opens_run(token(request), run_id):
            return forbidden()
        try:
            view = await run_page(
                inspector.store,
                inspector.workspace,
                run_id,
                inspector.settings.llm.model,
                request.query_params,
            )
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        return page("run.html", page=view, t=token(request) or "")

    async def download(request: Request) -> Response:
        run_id, path = request.path_params["run_id"], request.path_params["path"]
        if not inspector.signer.opens_run(token(request), run_id):
            return forbidden()
        try:
            data = await inspector.workspace.read(run_id, path)
        except WorkspaceError:
            return PlainTextResponse(f"There is no file {path} in this run.", status_code=404)
        name = path.rsplit("/", 1)[-1]
        # Always a download, never shown in this origin: an agent may have written HTML.
        return Response(
            data,
            media_type="application/octet-stream",
            headers={"content-disposition": f"attachment; filename*=UTF-8''{quote(name)}"},
        )

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not inspector.signer.opens_run(token(request), run_id):
            return forbidden()
        after = request.headers.get("last-event-id") or request.query_params.get("after", "0-0")
        if not _stream_id(after):
            after = "0-0"
        try:
            run = await inspector.store.get_run(run_id)
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        names = {a: a for a in await inspector.store.agent_ids(run_id)}
        for agent_id in names:
            found = await inspector.store.load_spec(run_id, agent_id)
            names[agent_id] = found[0].name if found else agent_id
        teams = {t.id: t.name or t.id for t in (run.cohort.teams if run.cohort else ())}
        line = env.get_template("_line.html").module.line  # type: ignore[attr-defined]

        def message(entry_id: str, event: RunEvent) -> str:
            if event.kind == "agent_created":
                names[event.agent_id or ""] = event.name
            row = timeline_line(entry_id, event, names, teams)
            data = {"kind": event.kind, "html": str(line(row)) if row else ""}
            return f"id: {entry_id}\nevent: run\ndata: {json.dumps(data)}\n\n"

        stream = _sse(inspector.live.watch(run_id, after), message)
        return StreamingResponse(
            stream, media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )

    def sees_all(request: Request) -> bool:
        open_here = inspector.open_list and is_local(request.scope)
        return open_here or inspector.signer.is_operator(token(request))

    async def health(_request: Request) -> Response:
        return PlainTextResponse("ok")

    chat_routes_ = [
        Route(path, endpoint, methods=methods)
        for path, endpoint, methods in (
            [
                # The schedules' first: "/chat/schedules" is not a run, "schedule …" typed
                # in a new chat is read before it is taken as a request.
                *schedule_routes(chat, page),
                *chat_routes(chat, page),
                *edit_routes(chat, page),
                *form_routes(chat),
            ]
            if chat is not None
            else []
        )
    ]
    spend_routes_ = [
        Route(path, endpoint, methods=methods)
        for path, endpoint, methods in spend_routes(
            inspector.spend, sees_all, page, inspector.settings.web_ui.spend_lines_shown
        )
    ]
    app = Starlette(
        routes=[
            *chat_routes_,
            *spend_routes_,
            Route("/", runs),
            Route("/healthz", health),
            Route("/runs/{run_id}", run),
            Route("/runs/{run_id}/events", events),
            Route("/runs/{run_id}/files/{path:path}", download),
            Mount("/static", StaticFiles(packages=[("bots.web", "static")]), name="static"),
        ],
        middleware=[Middleware(HostGuard, allowed=allowed_hosts(inspector.settings.web_ui))],
    )
    return app


def secured(app: ASGI) -> ASGI:
    """``app`` with the security headers on every response (a CSP allowing this origin's
    own scripts and styles only, no framing, no sniffing, no referrer, no caching)."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *_HEADERS]
            await send(message)

        await app(scope, receive, send_with_headers)

    return wrapped


def _stream_id(text: str) -> bool:
    a, dash, b = text.partition("-")
    return a.isdigit() and (not dash or b.isdigit())


async def _sse(
    entries: AsyncGenerator[tuple[str, RunEvent], None], message: Callable[[str, RunEvent], str]
) -> AsyncIterator[str]:
    """Server-sent events from the run's events, a comment every ``KEEPALIVE_S`` while
    nothing happens (proxies close idle connections), ``end`` after the run finished."""
    queue: asyncio.Queue[tuple[str, RunEvent] | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            # aclosing: a page closed mid-run stops watching at once.
            async with contextlib.aclosing(entries):
                async for entry in entries:
                    await queue.put(entry)
        finally:
            await queue.put(None)

    task = asyncio.create_task(pump())
    try:
        yield "retry: 2000\n\n"
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if item is None:
                yield "event: end\ndata: {}\n\n"
                return
            yield message(*item)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
