"""Team spend from Discord (a real discord.py client against the local Discord, real
Redis, the scripted model): a request's run records where it was asked — the guild and
the channel, by id and by name — for the spend ledger."""

from __future__ import annotations

import pytest

from core.types.place import Place
from tests.integration.test_discord_bot import harness

pytestmark = pytest.mark.integration


async def test_a_request_records_its_guild_and_channel(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Compare the three cheapest flights.")
        _, run_id = await h.card()
        thread = fake.thread_of(asked)
        assert thread is not None
        run = await h.svc.store.get_run(run_id)
        assert run.place == Place(
            platform="discord",
            workspace=str(fake.guild_id),
            channel=str(fake.channel("general")["id"]),
            workspace_name="Caramba Test",
            channel_name="#general",
            thread=str(thread["id"]),
        )
