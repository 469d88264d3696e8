"""``caramba doctor`` checks the Discord token against Discord (here: the local fake)."""

from __future__ import annotations

import pytest

from core.process.doctor_discord import check_discord
from core.process.doctor_types import Level
from tests.conftest import make_settings
from tests.fakes.discord_api import FakeDiscord


async def test_the_token_is_checked_with_discord(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeDiscord.serving() as fake:
        settings = make_settings(discord={"api_url": fake.api_url})
        monkeypatch.delenv("DISCORD_BOT_TOKEN", raising=False)
        missing = await check_discord(settings)
        assert missing.level is Level.WARN and "DISCORD_BOT_TOKEN" in missing.fix

        monkeypatch.setenv("DISCORD_BOT_TOKEN", fake.token)
        ok = await check_discord(settings)
        assert ok.level is Level.OK and "caramba" in ok.detail

        monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-the-token")
        refused = await check_discord(settings)
        assert refused.level is Level.FAIL and "Reset Token" in refused.fix
        assert [r.status for r in fake.requests("me")] == [200, 401]

    gone = await check_discord(settings)  # nothing listens there any more
    assert gone.level is Level.WARN and "could not be reached" in gone.detail
