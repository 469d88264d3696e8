"""Serving the bot. HTTP mode (production): the Bolt app as an ASGI app at
``/slack/events`` (signatures verified by Bolt: a bad or stale signature gets 401), served
by uvicorn. Socket Mode (development, no public URL): a websocket opened with the app-level
token (``SLACK_APP_TOKEN``).

Either way a graceful stop (SIGTERM, Ctrl-C) stops the bot before the process ends: its
relays stop between two events and give their runs' leases up, so that another bot
process (or this one restarted) takes the runs over at once. Under uvicorn that happens in
the ASGI lifespan's shutdown, which uvicorn awaits before it returns — and re-raises the
signal that stopped it, which ends the process before any code after ``serve()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from types import FrameType
from typing import Any

from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler

from bots.slack.app import SlackBot

EVENTS_PATH = "/slack/events"
# How long a stopping server waits for the requests under way (Slack wants an answer
# within 3 s anyway).
REQUESTS_GRACE_S = 5
log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Scope = dict[str, Any]


def asgi_app(bot: SlackBot) -> AsyncSlackRequestHandler:
    return AsyncSlackRequestHandler(bot.app, path=EVENTS_PATH)


class StopsBot:
    """An ASGI app: ``app`` for Slack's requests, and a lifespan whose shutdown (the
    server's last step) stops ``bot``."""

    def __init__(self, app: AsyncSlackRequestHandler, bot: SlackBot) -> None:
        self.app, self.bot = app, bot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await self.bot.aclose()
                except Exception:
                    log.exception("stopping the Slack bot failed")
                await send({"type": "lifespan.shutdown.complete"})
                return


@contextlib.asynccontextmanager
async def served(bot: SlackBot, host: str = "127.0.0.1") -> AsyncIterator[int]:
    """Serve the bot over HTTP on a free port of ``host`` while the block runs (tests,
    benchmarks); yields the port. The bot is closed at the end."""
    import uvicorn

    sock = socket.socket()
    sock.bind((host, 0))
    server = uvicorn.Server(uvicorn.Config(asgi_app(bot), log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                serving.result()  # it failed: say why
            await asyncio.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        await bot.aclose()
        server.should_exit = True
        await serving
        sock.close()


async def serve(bot: SlackBot, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT; the bot is stopped before this returns."""
    import uvicorn

    config = uvicorn.Config(
        StopsBot(asgi_app(bot), bot),
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        timeout_graceful_shutdown=REQUESTS_GRACE_S,
    )
    await uvicorn.Server(config).serve()


async def serve_socket_mode(bot: SlackBot, app_token: str) -> None:
    """Connect over Socket Mode (Web API calls still go to ``slack.api_url``) and stay
    until SIGTERM or SIGINT (or cancelled); then disconnect and stop the bot."""
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(bot.app, app_token)
    stop = asyncio.Event()
    try:
        with _stop_on_signals(stop):
            await handler.connect_async()
            await stop.wait()
    finally:
        await handler.close_async()
        await bot.aclose()


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` while the block runs (then the handlers before
    are put back). Signals reach only the main thread: elsewhere, nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()

    def handle(sig: int, _frame: FrameType | None) -> None:
        log.info("%s: stopping", signal.Signals(sig).name)
        loop.call_soon_threadsafe(stop.set)

    before = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
