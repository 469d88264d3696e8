"""``caramba slack``: the Slack bot's process, with the services the settings call for
(``tasks.services.chat_services``: Celery workers, or everything in this process)."""

from __future__ import annotations

import logging
import os

from bots.chat.startup import freeze_startup_objects
from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import serve, serve_socket_mode
from core.config import Settings
from tasks.services import chat_services

log = logging.getLogger(__name__)


async def run_slack(settings: Settings, secrets: SlackSecrets, host: str, port: int) -> None:
    """Serve the bot until SIGTERM or SIGINT: Socket Mode when there is an app-level
    token, else HTTP at ``/slack/events``. Both stop the bot (its runs' leases given up)
    before they return; under uvicorn the process may end right then (uvicorn re-raises
    the signal), so nothing that matters is left for after them."""
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
