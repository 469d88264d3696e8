"""The Discord bot end to end, offline: a real discord.py client connected to the local
Discord (tests/fakes/discord_api.py: gateway, REST, CDN), real Redis, the scripted model,
turns run by the inline scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.discord.bot import CarambaBot
from core.library.library import EntryNotFoundError
from core.llm.scripted import ScriptedModel
from core.services import Services
from core.types.run import RunStatus
from tests.fakes import discord_payloads
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_records import Request
from tests.integration.test_slack_http import quick_library, scripted
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
Json = dict[str, Any]


def layout_text(message: Json) -> str:
    """The text of a Components V2 message (its text displays, in order)."""
    every = discord_payloads.walk_components(message.get("components") or [])
    return "\n".join(c["content"] for c in every if c.get("type") == 10)


def custom_ids(message: Json) -> list[str]:
    """The custom ids of a message's buttons and selects, nested ones included."""
    every = discord_payloads.walk_components(message.get("components") or [])
    return [c["custom_id"] for c in every if c.get("custom_id")]


def buttons_of(message: Json) -> list[Json]:
    """A message's buttons with a custom id, nested ones included, in order."""
    every = discord_payloads.walk_components(message.get("components") or [])
    return [c for c in every if c.get("type") == 2 and c.get("custom_id")]


class Harness:
    def __init__(self, fake: FakeDiscord, bot: CarambaBot) -> None:
        self.fake, self.bot = fake, bot

    @property
    def svc(self) -> Services:
        return self.bot.svc

    def cards(self) -> list[Request]:
        """The proposal cards posted (messages with an Approve button)."""
        return [
            r
            for r in self.fake.requests("create_message")
            if "caramba:approve:" in json.dumps(r.json.get("components"))
        ]

    async def card(self, timeout_s: float = 10) -> tuple[Json, str]:
        """The one proposal card once posted, and its run's id."""
        await self.fake.wait_until(lambda: bool(self.cards()), timeout_s)
        (posted,) = self.cards()
        card = self.fake.message(posted.answer["id"])
        button = next(c for c in custom_ids(card) if c.startswith("caramba:approve:"))
        return card, button.rsplit(":", 1)[1]

    async def runs_end(self, timeout_s: float = 20) -> None:
        await self.bot.drain()
        await self.bot.relays.wait(timeout_s)
        assert not self.bot.relays, "a run did not end in time"

    def thread_texts(self, thread_id: str) -> list[str]:
        return [m["content"] for m in self.fake.channel_messages(thread_id)]


def discord_settings(s: Any, **discord: Any) -> Any:
    wanted = {"approver_roles": ("approver",), "status_interval_s": 0.0, **discord}
    return s.model_copy(update={"discord": s.discord.model_copy(update=wanted)})


@contextlib.asynccontextmanager
async def harness(
    make_services: Any,
    redis: Any,
    plan: Json | None = None,
    *,
    fake: FakeDiscord | None = None,
    model: ScriptedModel | None = None,
    **discord: Any,
) -> AsyncIterator[Harness]:
    """A bot over new services connected to ``fake`` (else to a new local Discord)."""
    folder = tempfile.mkdtemp(prefix="caramba-lib-")
    s = discord_settings(quick_library(planning_settings(), folder), **discord)
    svc = make_services(s, model or scripted(plan or design()), redis=redis)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if fake is None:
                fake = await stack.enter_async_context(FakeDiscord.serving())
            bot = CarambaBot(svc, guild_ready_timeout=0.05)
            async with fake.running(bot):
                yield Harness(fake, bot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_mention_thread_card_role_approval_progress_result_feedback(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Compare the three cheapest flights.")
        card, run_id = await h.card()
        thread = fake.thread_of(asked)
        assert thread is not None and card["channel_id"] == thread["id"]
        assert fake.requests("add_reaction")[0].params["emoji"] == "👀"
        assert card["flags"] & (1 << 15) and card["embeds"] == [] and card["content"] == ""
        assert "Find fares" in layout_text(card) and "Scout A" in layout_text(card)

        click = await fake.click(card["id"], f"caramba:approve:{run_id}", "bob")
        assert (await fake.wait_ack(click)).json["type"] == 6
        await h.runs_end()
        run = await h.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED
        approved = [t.by for t in run.history if t.to_status is RunStatus.APPROVED]
        assert approved == [fake.person("bob").id]
        decided = fake.message(card["id"])
        assert custom_ids(decided) == [], "no buttons left"
        assert "Approved by Bob." in layout_text(decided)
        texts = h.thread_texts(thread["id"])
        assert any("Run completed" in t for t in texts), texts
        assert "Orchestrator says: 3 flights" in texts[-1]
        status_edits = [
            r for r in fake.requests("edit_message") if r.params["message_id"] != card["id"]
        ]
        assert len(status_edits) >= 2
        result = fake.channel_messages(thread["id"])[-1]
        assert [r["emoji"]["name"] for r in result["reactions"]] == ["👍", "👎"]
        # Carol's 👍 (twice: once counted) and Alice's 👎 reach the library.
        for emoji, who in (("👍", "carol"), ("👍", "carol"), ("👎", "alice")):
            await fake.react(result["id"], emoji, who)
        library = await h.svc.library()
        assert run.cohort is not None

        async def ratings() -> int:
            await h.bot.drain()
            try:
                return (await library.get(run.cohort.id)).record.ratings
            except EntryNotFoundError:  # kept by the first vote
                return 0

        for _ in range(100):
            if await ratings() == 2:
                break
            await asyncio.sleep(0.05)
        record = (await library.get(run.cohort.id)).record
        assert (record.ratings, record.rating_sum) == (2, 1.0)
    assert fake.pinged() == [] and fake.unguarded_mentions() == []
