"""Serving the bot. HTTP mode (production): the Bolt app as an ASGI app at
``/slack/events`` (signatures verified by Bolt: a bad or stale signature gets 401), served
by uvicorn. Socket Mode (development, no public URL): a websocket opened with the app-level
token (``SLACK_APP_TOKEN``)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler

from bots.slack.app import SlackBot

EVENTS_PATH = "/slack/events"


def asgi_app(bot: SlackBot) -> AsyncSlackRequestHandler:
    return AsyncSlackRequestHandler(bot.app, path=EVENTS_PATH)


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
    """Serve until interrupted."""
    import uvicorn

    config = uvicorn.Config(asgi_app(bot), host=host, port=port, log_level="info")
    await uvicorn.Server(config).serve()


async def serve_socket_mode(bot: SlackBot, app_token: str) -> None:
    """Connect over Socket Mode (Web API calls still go to ``slack.api_url``) and stay."""
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(bot.app, app_token)
    try:
        await handler.start_async()
    finally:
        await handler.close_async()
