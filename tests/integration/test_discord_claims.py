"""Two ``caramba discord`` processes on one token (one Redis prefix, one local Discord):
each interaction — a button, the slash command — is answered by exactly one of them, the
request is planned once and the run decided once."""

from __future__ import annotations

import asyncio

import pytest

from core.types.run import RunStatus
from tests.fakes.discord_api import FakeDiscord
from tests.integration.test_discord_bot import harness

pytestmark = pytest.mark.integration


def callbacks(fake: FakeDiscord, interaction_id: str) -> list[int]:
    """The HTTP statuses Discord answered to each callback of one interaction."""
    calls = fake.requests(
        "interaction_callback", lambda r: r.params["interaction_id"] == interaction_id
    )
    return [r.status for r in calls]


async def test_two_bot_processes_answer_each_interaction_once(make_services, real_redis) -> None:
    async with (
        FakeDiscord.serving() as fake,
        harness(make_services, real_redis, fake=fake, command_guild="") as one,
        harness(make_services, real_redis, fake=fake, command_guild=""),  # a second process
    ):
        task = {"task": "Compare the three cheapest flights."}
        slash = await fake.slash("caramba", task, "alice")
        await fake.wait_ack(slash)
        card, run_id = await one.card()  # the cards the local Discord got, from either
        await asyncio.sleep(0.5)  # the other process had its chance to answer too
        assert callbacks(fake, slash.id) == [200]
        assert len(one.cards()) == 1, "one request, one card"
        click = await fake.click(card["id"], f"caramba:approve:{run_id}", "bob")
        await fake.wait_ack(click)
        await asyncio.sleep(0.5)
        assert callbacks(fake, click.id) == [200]
        run = await one.svc.store.get_run(run_id)
        assert run.status is not RunStatus.PROPOSED
        approvals = [h for h in run.history if h.to_status is RunStatus.APPROVED]
        assert len(approvals) == 1
