"""Who may ask and what the task is: people's mentions kept as names, the bot's own taken
out, mentions by bots ignored unless allow-listed, an empty mention answered with help
and no sign of planning (issue 15). Through signed requests into the served bot."""

from __future__ import annotations

import asyncio

import pytest

from bots.slack.app import HELP
from tests.integration.test_slack_http import harness

pytestmark = pytest.mark.integration

BOB = {"id": "UBOB", "name": "bob", "profile": {"display_name": "Bob", "real_name": "Bob Ray"}}


async def test_peoples_mentions_stay_in_the_task_as_names(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.users["UBOB"] = BOB
        await h.mention("ask <@UBOB> and <@UCAROL|carol> for the Q3 numbers <@UBOT>")
        _, run_id = await h.card()
        run = await h.bot.svc.store.get_run(run_id)
        assert run.task == "ask @Bob and @carol for the Q3 numbers"


async def test_a_bots_mention_is_ignored_unless_allow_listed(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        by_bot = {"type": "app_mention", "text": "<@UBOT> plan a trip", "ts": "1700000000.000100"}
        await h.event("EvBot", {**by_bot, "user": "UOTHER", "bot_id": "BOTHER"})
        await h.bot.drain()
        await asyncio.sleep(0.3)
        assert h.slack.of("reactions.add") == []
        assert h.slack.of("chat.postMessage") == []
        assert not h.bot.relays

        slack = h.bot.svc.settings.slack
        allowed = slack.model_copy(update={"allow_bots": ("BOTHER",)})
        h.bot.svc.settings = h.bot.svc.settings.model_copy(update={"slack": allowed})
        await h.event("EvBot2", {**by_bot, "user": "UOTHER", "bot_id": "BOTHER"})
        await h.card()


async def test_an_empty_mention_gets_help_and_no_planning_signs(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("   \n  ")
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
        await h.bot.drain()
        (post,) = h.slack.of("chat.postMessage")
        assert post["text"] == HELP
        assert h.slack.of("reactions.add") == []
        assert h.slack.of("assistant.threads.setStatus") == []
        assert not h.bot.relays
