"""``caramba slack``: the Slack bot's process, with the services the settings call for
(``tasks.services.chat_services``: Celery workers, or everything in this process)."""

from __future__ import annotations

import logging
import os

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.startup import freeze_startup_objects
from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import serve, serve_socket_mode
from core.config import Settings
from core.errors import ConfigError
from tasks.services import chat_services

log = logging.getLogger(__name__)
# Slack's auth.test errors that mean the token itself is wrong.
BAD_TOKEN = ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired")
_CHECK_TIMEOUT_S = 10


async def check_token(settings: Settings, secrets: SlackSecrets) -> None:
    """``auth.test`` with the bot token before anything starts: a token Slack refuses is a
    ConfigError naming SLACK_BOT_TOKEN (the process ends with one line); Slack out of
    reach is only logged (the bot's calls are tried again)."""
    client = AsyncWebClient(
        token=secrets.bot_token, base_url=settings.slack.api_url, timeout=_CHECK_TIMEOUT_S
    )
    try:
        who = await client.auth_test()
    except SlackApiError as exc:
        error = str(exc.response.get("error", "")) if exc.response is not None else ""
        if error in BAD_TOKEN:
            raise ConfigError(
                f"Slack refuses the bot token in SLACK_BOT_TOKEN ({error})",
                hint="copy the Bot User OAuth Token (xoxb-...) again from the app's "
                "OAuth & Permissions page",
            ) from None
        log.warning("Slack's auth.test answered %s; starting anyway", error or exc)
        return
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        log.warning("Slack could not be reached (%s); starting anyway", type(exc).__name__)
        return
    log.info(
        "Slack accepts the bot token: %s in %s",
        who.get("user"),
        who.get("team") or who.get("team_id"),
    )


async def run_slack(settings: Settings, secrets: SlackSecrets, host: str, port: int) -> None:
    """Serve the bot until SIGTERM or SIGINT: Socket Mode when there is an app-level
    token, else HTTP at ``/slack/events``. Both stop the bot (its runs' leases given up)
    before they return; under uvicorn the process may end right then (uvicorn re-raises
    the signal), so nothing that matters is left for after them."""
    await check_token(settings, secrets)
    async with chat_services(settings) as svc:
        bot = SlackBot(svc, secrets)
        resumed = await bot.start()
        freeze_startup_objects()
        log.info("the Slack bot is up (pid %d); %d runs taken up", os.getpid(), resumed)
        try:
            if secrets.app_token:
                await serve_socket_mode(bot, secrets.app_token)
            else:
                await serve(bot, host, port)
        finally:
            await bot.aclose()
