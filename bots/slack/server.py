"""Serving the bot. HTTP mode (production): the Bolt app as an ASGI app at
``/slack/events`` (signatures verified by Bolt: a bad or stale signature gets 401), served
by uvicorn. Socket Mode (development, no public URL): a websocket opened with the app-level
token (``SLACK_APP_TOKEN``)."""

from __future__ import annotations

from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler

from bots.slack.app import SlackBot

EVENTS_PATH = "/slack/events"


def asgi_app(bot: SlackBot) -> AsyncSlackRequestHandler:
    return AsyncSlackRequestHandler(bot.app, path=EVENTS_PATH)


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
