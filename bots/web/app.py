"""The inspector as one ASGI app (Starlette): the runs list, a run's page, its live
events (server-sent events) and its files. Pages are rendered on the server with Jinja2,
autoescaped: whatever agents or people wrote is shown as text, never as markup."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bots.web.chat import WebChat
from bots.web.chat_edit import edit_routes
from bots.web.chat_routes import chat_routes
from bots.web.chat_schedules import schedule_routes
from bots.web.forms import form_routes
from bots.web.guard import HostGuard, allowed_hosts
from bots.web.inspector import Inspector, inspector_routes
from bots.web.pretty import filters
from bots.web.spend import spend_routes
from bots.web.timeline import short
from bots.web.view import age
from core.types.figures import exact_cost, number

__all__ = ["CSP", "Inspector", "create_app", "secured", "templates"]

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

Scope = MutableMapping[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]
RouteSpec = tuple[str, Any, list[str]]


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
    """The app: the web chat's routes (when there is a chat), the spend page, the
    inspector's pages and its static files, behind the host guard."""
    env = templates()

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    shown = inspector.settings.web_ui.spend_lines_shown
    return Starlette(
        routes=[
            *_routes(_chat_routes(chat, page)),
            *_routes(spend_routes(inspector.spend, inspector.sees_all, page, shown)),
            Route("/healthz", _health),
            *_routes(inspector_routes(inspector, page, env)),
            Mount("/static", StaticFiles(packages=[("bots.web", "static")]), name="static"),
        ],
        middleware=[Middleware(HostGuard, allowed=allowed_hosts(inspector.settings.web_ui))],
    )


def _chat_routes(chat: WebChat | None, page: Any) -> list[RouteSpec]:
    """The web chat's route groups (none without a chat)."""
    if chat is None:
        return []
    return [
        # The schedules' first: "/chat/schedules" is not a run, "schedule …" typed
        # in a new chat is read before it is taken as a request.
        *schedule_routes(chat, page),
        *chat_routes(chat, page),
        *edit_routes(chat, page),
        *form_routes(chat),
    ]


def _routes(specs: list[RouteSpec]) -> list[BaseRoute]:
    return [Route(path, endpoint, methods=methods) for path, endpoint, methods in specs]


async def _health(_request: Request) -> Response:
    return PlainTextResponse("ok")


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
