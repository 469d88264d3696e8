"""A form an MCP server asks for, from Discord (a real discord.py client against the local
Discord's gateway interactions, real Redis, the scripted model, the tests' own MCP
server): the thread gets the form with Fill in / Decline; Carol (no approver) is refused
in private; Alice's Fill in opens a modal built from the schema (text inputs, a
Label-wrapped select, a checkbox); a submission the form refuses is answered in private
with the problem; a good one reaches the server and the run ends with the booking."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.discord.bot import CarambaBot
from core.tools import elicit as elicit_module
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_payloads import walk_components
from tests.integration.forms_run import BOOKED, TASK, booker, shop_tools, with_shop
from tests.integration.test_discord_bot import Harness, discord_settings
from tests.integration.test_slack_http import quick_library
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
Json = dict[str, Any]


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


@contextlib.asynccontextmanager
async def harness(make_services: Any, redis: Any) -> AsyncIterator[Harness]:
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = with_shop(discord_settings(quick_library(planning_settings(), folder)))
    svc = make_services(s, booker(), redis=redis)
    try:
        async with shop_tools(svc), FakeDiscord.serving() as fake:
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield Harness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def asked(h: Harness) -> tuple[Json, Json]:
    """Ask, and wait for the form: its message and the thread."""
    mention = await h.fake.mention("general", "alice", TASK)
    await h.fake.wait_until(lambda: h.fake.thread_of(mention) is not None)
    thread = h.fake.thread_of(mention)
    assert thread is not None

    def form() -> Json | None:
        for m in h.fake.channel_messages(thread["id"]):
            if "caramba:form:fill:" in json.dumps(m["components"]):
                return m
        return None

    await h.fake.wait_until(lambda: form() is not None, 20)
    message = form()
    assert message is not None
    return message, thread


async def test_alice_fills_in_the_servers_form(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        form, thread = await asked(h)
        assert "shop asks" in form["content"] and "Who is the table for?" in form["content"]
        buttons = form["components"][0]["components"]
        assert [b["label"] for b in buttons] == ["Fill in", "Decline"]
        fill = buttons[0]["custom_id"]
        form_id = fill.rsplit(":", 1)[1]

        refused = await fake.click(form["id"], fill, "carol")
        ack = (await fake.wait_ack(refused)).json
        assert ack["type"] == 4 and ack["data"]["flags"] & 64
        assert ack["data"]["content"].startswith("Only Alice, who asked")

        opened = await fake.click(form["id"], fill, "alice")
        shown = (await fake.wait_ack(opened)).json
        assert shown["type"] == 9, "the modal"
        parts = {
            c.get("custom_id"): c["type"] for c in walk_components(shown["data"]["components"])
        }
        assert parts["f:name"] == 4 and parts["f:guests"] == 4 and parts["f:email"] == 4
        assert parts["f:seating"] == 3 and parts["f:vegan"] == 23
        modal = f"caramba:fm:{form_id}"

        values = {"f:name": "Ada", "f:guests": "20", "f:seating": ["terrace"], "f:vegan": True}
        bad = await fake.submit_modal(modal, values, "alice")
        await fake.wait_ack(bad)
        await fake.wait_until(lambda: bool(bad.followup_ids))
        problem = fake.message(bad.followup_ids[0])
        assert problem["flags"] & 64 and "Guests must be at most 12." in problem["content"]

        again = await fake.click(form["id"], fill, "alice")
        assert (await fake.wait_ack(again)).json["type"] == 9
        good = await fake.submit_modal(modal, {**values, "f:guests": "4"}, "alice")
        await fake.wait_ack(good)
        await h.runs_end()
        texts = h.thread_texts(thread["id"])
        assert any(BOOKED in t for t in texts)
        answered = fake.message(form["id"])
        assert "Sent by **Alice** to shop." in answered["content"]
        assert answered["components"] == [], "no buttons left"

    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_decline_tells_the_server(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        form, thread = await asked(h)
        decline = form["components"][0]["components"][1]["custom_id"]
        click = await h.fake.click(form["id"], decline, "alice")
        await h.fake.wait_ack(click)
        await h.runs_end()
        assert any("Not booked (decline)." in t for t in h.thread_texts(thread["id"]))
        assert "Declined by **Alice** for shop." in h.fake.message(form["id"])["content"]
