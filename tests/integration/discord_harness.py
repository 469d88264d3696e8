"""The Discord tests' shared set-up: a real discord.py bot over new services (real
Redis, the given model) connected to a new local Discord (``tests.fakes.discord_api``),
with a library that learns outside the repository."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Any

from bots.discord.bot import CarambaBot
from core.config import Settings
from tests.fakes.discord_api import FakeDiscord
from tests.integration.test_discord_bot import Harness, discord_settings
from tests.integration.test_slack_http import quick_library
from tests.planning_helpers import settings as planning_settings


@contextlib.asynccontextmanager
async def discord_harness(
    make_services: Any,
    redis: Any,
    model: Any,
    *,
    configure: Callable[[Settings], Settings] = lambda s: s,
    **planning: Any,
) -> AsyncIterator[Harness]:
    """The bot over ``model`` and ``redis``; planning's settings (``planning``: their
    overrides) for Discord, then changed by ``configure``."""
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = configure(discord_settings(quick_library(planning_settings(**planning), folder)))
    svc = make_services(s, model, redis=redis)
    try:
        async with FakeDiscord.serving() as fake:
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield Harness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["discord_harness"]
