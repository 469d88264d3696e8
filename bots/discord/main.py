"""``caramba discord``: the Discord bot's process, with the services the settings call for
(``tasks.services.chat_services``: Celery workers, or everything in this process)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

import discord

from bots.chat.startup import freeze_startup_objects
from bots.discord.bot import CarambaBot
from core.config import Settings
from core.errors import ConfigError, MissingSecretError
from tasks.services import chat_services

log = logging.getLogger(__name__)
TOKEN_VARIABLE = "DISCORD_BOT_TOKEN"
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def discord_token() -> str:
    """The bot's token, from the environment only."""
    token = os.environ.get(TOKEN_VARIABLE, "")
    if not token:
        raise MissingSecretError(
            TOKEN_VARIABLE, "the Discord bot (its token, Developer Portal → Bot)"
        )
    return token


async def run_discord(settings: Settings, token: str, sync: bool) -> None:
    """Run the bot until SIGTERM or SIGINT; ``sync``: publish ``/caramba`` on start even
    if ``discord.sync_commands`` is off. It stops its relays (their runs given up for the
    next process) before it returns."""
    async with chat_services(settings) as svc:
        bot = CarambaBot(svc, sync=sync)
        loop = asyncio.get_running_loop()
        stopping: list[asyncio.Task[None]] = []
        for sig in _SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, lambda: stopping.append(loop.create_task(bot.close())))
        log.info("the Discord bot connects (pid %d)", os.getpid())
        try:
            async with bot:
                freeze_startup_objects()
                await bot.start(token)
        except discord.LoginFailure as exc:
            raise ConfigError(
                f"Discord refused {TOKEN_VARIABLE}: {exc}",
                hint="copy the token again (Developer Portal → Bot → Reset Token)",
            ) from exc
        except discord.PrivilegedIntentsRequired as exc:
            raise ConfigError(
                "Discord refused the Message Content intent the bot asks for",
                hint="turn on Message Content Intent (Developer Portal → Bot), or set "
                "discord.message_content = false (then people answer agents by mentioning "
                "the bot)",
            ) from exc
        finally:
            for sig in _SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
