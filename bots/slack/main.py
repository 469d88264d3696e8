"""``caramba slack``: the Slack bot's process, with the scheduler the settings call for.

With ``redis.url`` set, turns are published to the Celery workers (``caramba worker``);
without it, everything runs in this process (embedded mode, for trying it out).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import serve, serve_socket_mode
from core.config import Settings
from core.process.embedded import embedded_services
from core.process.wiring import build_llm, build_services
from core.services import Services

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def production_services(settings: Settings) -> AsyncIterator[Services]:
    from tasks.app import make_app, require_redis
    from tasks.scheduler import CeleryScheduler

    require_redis(settings)
    scheduler = CeleryScheduler(make_app(settings), settings)
    svc = build_services(settings, scheduler, llm=build_llm(settings))
    try:
        yield svc
    finally:
        await scheduler.aclose()
        await svc.aclose()


async def run_slack(settings: Settings, secrets: SlackSecrets, host: str, port: int) -> None:
    """Serve the bot until interrupted: Socket Mode when there is an app-level token,
    else HTTP at ``/slack/events``."""
    services = (
        embedded_services(settings, build_llm(settings))
        if settings.redis.embedded
        else production_services(settings)
    )
    async with services as svc:
        bot = SlackBot(svc, secrets)
        resumed = await bot.start()
        if resumed:
            log.info("resumed relaying %d runs", resumed)
        try:
            if secrets.app_token:
                await serve_socket_mode(bot, secrets.app_token)
            else:
                await serve(bot, host, port)
        finally:
            await bot.aclose()
