"""The people room's rules hold on every adapter (``core.runs.people``): three 👍 clicks
by one person store one rating in Slack, Discord and the web chat, and the web chat may
not cancel a run someone else asked for. Against the Slack and Discord fakes and the web
chat's app, real Redis (the web chat: demo mode)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from bots.slack.blocks import FEEDBACK_UP
from bots.slack.feedback import ALREADY, THANKS
from core.library.library import EntryNotFoundError
from core.runs import people
from core.runs.outcomes import AlreadyRated, Rated, Requested
from core.runs.requests import request_run
from core.services import Services
from core.types.people import Person
from core.types.run import RunState, RunStatus
from tests.integration import test_discord_bot as discord_bot
from tests.integration.test_slack_http import ANA, harness
from tests.integration.test_slack_results import THREAD, feedback_message
from tests.integration.test_web_chat import chat_app, client, post, until

ALICE = Person("U-alice", "Alice")

pytestmark = pytest.mark.integration


async def _ratings(svc: Services, run: RunState) -> int:
    """The ratings the library counted for the run's cohort."""
    assert run.cohort is not None
    try:
        return (await (await svc.library()).get(run.cohort.id)).record.ratings
    except EntryNotFoundError:  # kept by the first vote
        return 0


async def test_three_thumbs_up_by_one_person_in_slack_store_one_rating(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("Compare the three cheapest flights from Lisbon to Berlin.")
        _, run_id = await h.card()
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        assert feedback_message(h.slack) is not None
        await asyncio.gather(
            *(h.click(FEEDBACK_UP, run_id, ANA, THREAD) for _ in range(3)),
        )
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postEphemeral")) == 3)
        told = sorted(n["text"] for n in h.slack.of("chat.postEphemeral"))
        assert told == sorted([THANKS, ALREADY, ALREADY])
        assert await _ratings(h.bot.svc, await h.bot.svc.store.get_run(run_id)) == 1


async def test_three_thumbs_up_by_one_person_in_discord_store_one_rating(
    make_services, real_redis
) -> None:
    async with discord_bot.harness(make_services, real_redis) as h:
        fake = h.fake
        await fake.mention("general", "alice", "Compare the three cheapest flights.")
        card, run_id = await h.card()
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await h.runs_end()
        thread = fake.channel_messages(card["channel_id"])
        result = thread[-1]
        assert [r["emoji"]["name"] for r in result["reactions"]] == ["👍", "👎"]
        for _ in range(3):
            await fake.react(result["id"], "👍", "carol")
        run = await h.svc.store.get_run(run_id)
        for _ in range(100):
            await h.bot.drain()
            if await _ratings(h.svc, run):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the other two clicks had their chance to count
        await h.bot.drain()
        assert await _ratings(h.svc, run) == 1


async def test_three_thumbs_up_in_the_web_chat_store_one_rating(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task="Budget our offsite")
        path = asked.headers["location"]
        run_id = path.rsplit("/", 1)[1]
        await until(c, path, r'value="approve"')
        await post(c, f"{path}/act", action="approve")
        await until(c, path, r'value="up"', timeout_s=60)
        for _ in range(3):
            assert (await post(c, f"{path}/act", action="up")).status_code == 303
        page = await until(c, path, r"You already rated this run")
        assert page.count(Rated().line) == 1 and page.count(AlreadyRated().line) == 2
        assert await _ratings(svc, await svc.store.get_run(run_id)) == 1


async def _proposed(svc: Any, run_id: str) -> None:
    for _ in range(300):
        if (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the request was never proposed")


async def test_the_web_chat_may_not_cancel_a_run_someone_else_asked_for(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        # Alice asked in Slack: the web chat names her as the people room saw her.
        asked_in_slack = await people.request(svc, "Budget our offsite", ALICE)
        assert isinstance(asked_in_slack, Requested)
        run_id = asked_in_slack.run_id
        await _proposed(svc, run_id)
        path = f"/chat/{run_id}"
        assert (await post(c, f"{path}/act", action="cancel")).status_code == 303
        told = await until(c, path, r"Only Alice, who asked")
        assert "approvers" in told and "U-alice" not in told
        assert (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED
        # Someone the people room never saw is not named by an id either.
        unseen = await request_run(svc, "Budget our offsite", requested_by="U-zed")
        await _proposed(svc, unseen)
        await post(c, f"/chat/{unseen}/act", action="cancel")
        told = await until(c, f"/chat/{unseen}", r"Only someone, who asked")
        assert "U-zed" not in told
        # The run's page in the inspector names her too.
        link = re.search(r'href="(/runs/[^"]+)">inspect this run', (await c.get(path)).text)
        assert link is not None
        page = (await c.get(link.group(1).replace("&amp;", "&"))).text
        assert "asked by Alice" in page and "asked by U-alice" not in page

        # Its own request, the web chat may cancel; the run's end names it, not "web".
        asked = await post(c, "/chat", task="Budget our offsite")
        mine = asked.headers["location"].rsplit("/", 1)[1]
        await _proposed(svc, mine)
        await post(c, f"{asked.headers['location']}/act", action="cancel")
        run = await svc.store.get_run(mine)
        assert run.status is RunStatus.CANCELLED
        events = [e for _, e in await svc.store.read_events(mine, count=1000)]
        assert "cancelled by the web chat" in str(events[-1])
