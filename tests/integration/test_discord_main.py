"""``caramba discord``'s process function: it connects with the token and the intents,
publishes /caramba, and stops cleanly; without a token it says which variable to set."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from bots.discord.main import discord_token, run_discord
from core.errors import ConfigError, MissingSecretError
from tests.conftest import make_settings
from tests.fakes.discord_api import FakeDiscord


async def test_run_discord_connects_syncs_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_BOT_TOKEN", raising=False)
    with pytest.raises(MissingSecretError, match="DISCORD_BOT_TOKEN"):
        discord_token()
    settings = make_settings(discord={"sync_commands": False, "message_content": False})
    async with FakeDiscord.serving() as fake:
        running = asyncio.create_task(run_discord(settings, fake.token, sync=True))
        await fake.wait_until(lambda: bool(fake.gateway.identifies), 15)
        identify = fake.gateway.identifies[0]
        assert identify["token"] == fake.token
        # guilds (1) + guild messages (512) + guild reactions (1024); no message content.
        assert identify["intents"] == 1 | 512 | 1024
        names = sorted(c["name"] for c in fake.commands[None])
        assert names == ["caramba", "caramba-budget", "caramba-schedule"]
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_a_refused_token_is_a_configuration_error() -> None:
    settings = make_settings()
    async with FakeDiscord.serving():
        with pytest.raises(ConfigError, match="Discord refused DISCORD_BOT_TOKEN"):
            await asyncio.wait_for(run_discord(settings, "not-the-token", sync=False), 15)
