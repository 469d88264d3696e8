"""The inspector link in the threads (issue 16): with ``[web_ui] base_url`` and a signing
key, the Slack and Discord status messages and proposal cards carry a link to the run's
page whose token opens that run (checked with the web app's own ``Signer``); without a
``base_url``, no link."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.discord.bot import CarambaBot
from bots.discord.inspector import INSPECT
from bots.web.access import Signer
from core.config import Settings
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_discord_bot import Harness as DiscordHarness
from tests.integration.test_discord_bot import discord_settings
from tests.integration.test_slack_http import ANA, Harness, quick_library, scripted, serve_bot
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
KEY = "s" * 40
BASE = "https://caramba.example.com"
LINK = re.compile(re.escape(BASE) + r"/runs/(run_[0-9a-z]+)\?t=([A-Za-z0-9_.-]+)")


def linked(settings: Settings, base_url: str) -> Settings:
    web = settings.web_ui.model_copy(update={"base_url": base_url})
    return settings.model_copy(update={"web_ui": web})


def opened_runs(payload: Any) -> list[str]:
    """The runs the inspector links in ``payload`` open (each link's token checked)."""
    found = LINK.findall(json.dumps(payload).replace("&amp;", "&"))
    return [run for run, token in found if Signer(KEY.encode()).opens_run(token, run)]


@contextlib.asynccontextmanager
async def slack_bot(make_services: Any, redis: Any, base_url: str) -> AsyncIterator[Harness]:
    slack = await FakeSlackAPI().start()
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = linked(quick_library(planning_settings(), folder), base_url)
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(design()), redis=redis)
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        await slack.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def discord_bot(
    make_services: Any, redis: Any, base_url: str
) -> AsyncIterator[DiscordHarness]:
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = linked(discord_settings(quick_library(planning_settings(), folder)), base_url)
    svc = make_services(s, scripted(design()), redis=redis)
    try:
        async with FakeDiscord.serving() as fake:
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield DiscordHarness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("base_url", [BASE, ""])
async def test_slack_card_and_status_link_to_the_run(
    make_services, real_redis, monkeypatch: pytest.MonkeyPatch, base_url: str
) -> None:
    monkeypatch.setenv("CARAMBA_WEB_SECRET", KEY)
    async with slack_bot(make_services, real_redis, base_url) as h:
        await h.mention("Compare the three cheapest flights from Lisbon to Berlin.")
        card, run_id = await h.card()
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        statuses = [
            m
            for m in h.slack.of("chat.postMessage") + h.slack.of("chat.update")
            if "tool calls" in m["text"]
        ]
        assert statuses, "the status message was posted and edited"
        if not base_url:
            assert "/runs/" not in json.dumps(h.slack.calls, default=str)
            return
        assert opened_runs(card["blocks"]) == [run_id]
        assert all(opened_runs(m["blocks"]) == [run_id] for m in statuses)
        assert "Inspect this run" in json.dumps(statuses[-1]["blocks"])
        # Buttons stay last: the link is the line above them.
        assert card["blocks"][-1]["type"] == "actions"
        # The card as redrawn once approved keeps its link.
        (approved,) = [m for m in h.slack.of("chat.update") if "Approved" in m["text"]]
        assert opened_runs(approved["blocks"]) == [run_id]


def _buttons(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every button of a message, in rows or nested in a Components V2 layout (containers,
    sections' accessories)."""
    found: list[dict[str, Any]] = []
    for c in components:
        if c.get("type") == 2:
            found.append(c)
        found += _buttons(c.get("components") or [])
        if c.get("accessory"):
            found += _buttons([c["accessory"]])
    return found


@pytest.mark.parametrize("base_url", [BASE, ""])
async def test_discord_card_and_status_link_to_the_run(
    make_services, real_redis, monkeypatch: pytest.MonkeyPatch, base_url: str
) -> None:
    monkeypatch.setenv("CARAMBA_WEB_SECRET", KEY)
    async with discord_bot(make_services, real_redis, base_url) as h:
        fake = h.fake
        await fake.mention("general", "alice", "Compare the three cheapest flights.")
        posted, run_id = await h.card()
        click = await fake.click(posted["id"], f"caramba:approve:{run_id}", "bob")
        await fake.wait_ack(click)
        await h.runs_end()
        sent = fake.requests("create_message") + fake.requests("edit_message")
        statuses = [r.json for r in sent if "tool calls" in (r.json.get("content") or "")]
        assert statuses, "the status message was posted and edited"
        if not base_url:
            assert "/runs/" not in json.dumps([r.json for r in sent])
            return
        card = next(r.json for r in sent if "caramba:approve:" in json.dumps(r.json))
        for message in [card, *statuses]:
            links = [b for b in _buttons(message["components"]) if b.get("url")]
            assert [(b["label"], b["style"]) for b in links] == [(INSPECT, 5)]
            assert opened_runs(links) == [run_id]
