"""Team spend from Discord (a real discord.py client against the local Discord's gateway
and REST, real Redis, the scripted model at a fixed cost a call):

- a request's run records where it was asked — the guild and the channel, by id and by
  name — for the spend ledger;
- ``/caramba-budget`` (or ``/caramba task:budget …``, Slack's words): Carol (no admin)
  may look (only she sees it) but not set; Bob (an approver) sets #general's budget with
  Alice as its owner, said in the channel;
- a request taking the month past 80 % of the budget is warned about in its thread and
  runs; the next, over the budget, waits in its thread with Approve spending / Deny:
  Carol's click is refused in private, Alice's approves — the message then says who
  decided, without buttons — and the run is answered; nothing the bot sent pings."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.config_governance import GovernanceSettings
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import spend
from core.types.place import Place
from core.types.run import RunStatus
from tests.integration.discord_harness import discord_harness
from tests.integration.test_discord_bot import (
    Harness,
    buttons_of,
    custom_ids,
    harness,
    layout_text,
)

pytestmark = pytest.mark.integration
Json = dict[str, Any]
CALL_USD = 0.01


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


def direct_model() -> ScriptedModel:
    """Every request answered directly (a router call each), at ``CALL_USD`` a call."""
    m = ScriptedModel(cost_per_call_usd=CALL_USD)
    direct = {"path": "direct", "reason": "a fact", "answer": "Paris."}
    return m.script("router", *[Reply(calls=(call("submit_router", direct),))] * 6)


def governed(make_services: Any, redis: Any) -> Any:
    gov = GovernanceSettings(fold_every_s=0.01)
    return discord_harness(
        make_services,
        redis,
        direct_model(),
        configure=lambda s: s.model_copy(update={"governance": gov}),
        library_top_k=0,
    )


async def answered(h: Harness, task: str, who: str = "alice") -> tuple[str, str]:
    """``who`` mentions the bot with ``task``; the run's id and its thread's, once it
    ended and its cost is in the ledger."""
    asked = await h.fake.mention("general", who, task)
    await h.fake.wait_until(lambda: h.fake.thread_of(asked) is not None, 10)
    thread = h.fake.thread_of(asked)
    assert thread is not None
    run_id = await run_of(h, thread["id"])
    await ended(h, run_id)
    await spend.fold_ended(h.svc)
    return run_id, thread["id"]


async def run_of(h: Harness, thread_id: str) -> str:
    channel = str(h.fake.channel("general")["id"])
    for _ in range(200):
        run_id = await h.bot.threads.run_in(channel, thread_id)
        if run_id:
            return run_id
        await asyncio.sleep(0.05)
    raise AssertionError("the thread never had a run")


async def ended(h: Harness, run_id: str) -> None:
    for _ in range(400):
        if (await h.svc.store.get_run(run_id)).status.terminal:
            await h.runs_end()
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_id} never ended")


def said(h: Harness, interaction: Any) -> Json:
    assert interaction.original_id is not None
    return h.fake.message(interaction.original_id)


async def test_budget_command_warning_and_an_ask_approved_by_its_owner(
    make_services, real_redis
) -> None:
    async with governed(make_services, real_redis) as h:
        fake, svc = h.fake, h.svc
        alice = fake.person("alice")
        first, _ = await answered(h, "What is the capital of France?")
        spent = (await spend.report(svc)).total_usd
        assert spent > 0

        # Carol may look (only she sees it), not set.
        look = await fake.slash("caramba-budget", {}, "carol")
        await fake.wait_ack(look)
        shown = said(h, look)
        assert look.ephemeral and "**\\#general (Caramba Test)** spent" in shown["content"]
        assert "No monthly budget applies here." in shown["content"]
        refused = await fake.slash("caramba-budget", {"usd": 5}, "carol")
        await fake.wait_ack(refused)
        assert refused.ephemeral and "Only the admins" in said(h, refused)["content"]
        bad = await fake.slash("caramba-budget", {"usd": 5, "owner": "@ alice"}, "bob")
        await fake.wait_ack(bad)
        assert bad.ephemeral and "mention" in said(h, bad)["content"]
        stranger = await fake.slash("caramba-budget", {"usd": 5, "owner": "424242"}, "bob")
        await fake.wait_ack(stranger)
        assert stranger.ephemeral and "do not know" in said(h, stranger)["content"]
        assert (await spend.report(svc)).budgets == ()

        # Bob (an approver) sets it: 90 % of it spent already, Alice its owner.
        budget = round(spent / 0.9, 6)
        owner = f"<@{alice.id}>"
        setting = await fake.slash("caramba-budget", {"usd": budget, "owner": owner}, "bob")
        await fake.wait_ack(setting)
        line = said(h, setting)
        assert not setting.ephemeral
        assert "Bob set #general's budget to" in line["content"]
        assert "Alice approves requests over it." in line["content"]

        # Past 80 %: warned in the thread, and it runs.
        second, thread = await answered(h, "And of Spain?", "carol")
        assert any("⚠️ #general has spent" in t for t in h.thread_texts(thread))
        assert (await svc.store.get_run(second)).status is RunStatus.COMPLETED

        # Over it: the ask, with its buttons; Carol refused, Alice approves.
        asked = await fake.mention("general", "carol", "And of Italy?")
        await fake.wait_until(lambda: fake.thread_of(asked) is not None, 10)
        thread3 = fake.thread_of(asked)
        assert thread3 is not None

        def asks() -> list[Json]:
            return [
                m
                for m in fake.channel_messages(thread3["id"])
                if "over its channel budget" in layout_text(m)
            ]

        await fake.wait_until(lambda: bool(asks()), 20)
        (ask,) = asks()
        assert "It waits for Alice" in layout_text(ask)
        assert [b["label"] for b in buttons_of(ask)] == ["Approve spending", "Deny"]
        approve, _ = custom_ids(ask)
        third = approve.rsplit(":", 1)[1]
        assert (await svc.store.get_run(third)).status is RunStatus.PLANNING

        click = await fake.click(ask["id"], approve, "carol")
        await fake.wait_ack(click)
        await fake.wait_until(lambda: bool(click.followup_ids), 10)
        told = fake.message(click.followup_ids[0])
        assert told["flags"] & 64 and "Only Alice or an admin may decide" in told["content"]
        assert (await svc.store.get_run(third)).status is RunStatus.PLANNING

        click = await fake.click(ask["id"], approve, "alice")
        await fake.wait_ack(click)
        await fake.wait_until(lambda: custom_ids(fake.message(ask["id"])) == [], 10)
        decided = layout_text(fake.message(ask["id"]))
        assert "✔ Spending over the budget approved by **Alice**." in decided
        await ended(h, third)
        await h.runs_end()
        assert (await svc.store.get_run(third)).status is RunStatus.COMPLETED
        assert first != second != third
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def asked_over_budget(h: Harness) -> tuple[Json, Json]:
    """Carol asks in #general, over its budget: the ask (with its buttons) and the
    thread."""
    fake = h.fake
    asked = await fake.mention("general", "carol", "And of Italy?")
    await fake.wait_until(lambda: fake.thread_of(asked) is not None, 10)
    thread = fake.thread_of(asked)
    assert thread is not None

    def asks() -> list[Json]:
        return [
            m
            for m in fake.channel_messages(thread["id"])
            if "over its channel budget" in layout_text(m)
        ]

    await fake.wait_until(lambda: bool(asks()), 20)
    (ask,) = asks()
    return ask, thread


async def test_the_owner_denies_and_the_run_ends_saying_why(make_services, real_redis) -> None:
    async with governed(make_services, real_redis) as h:
        fake, svc = h.fake, h.svc
        await answered(h, "What is the capital of France?")
        # Bob sets a budget already spent, owning it himself (no owner named), in the
        # words Slack takes: "/caramba task:budget $0.01".
        setting = await fake.slash("caramba", {"task": "budget $0.01"}, "bob")
        await fake.wait_ack(setting)
        assert "Bob approves requests over it." in said(h, setting)["content"]
        look = await fake.slash("caramba", {"task": "budget"}, "carol")
        await fake.wait_ack(look)
        assert look.ephemeral and "of $0.01 (" in said(h, look)["content"]

        ask, thread = await asked_over_budget(h)
        _, deny = custom_ids(ask)
        run_id = deny.rsplit(":", 1)[1]
        click = await fake.click(ask["id"], deny, "bob")
        await fake.wait_ack(click)
        await fake.wait_until(lambda: custom_ids(fake.message(ask["id"])) == [], 10)
        assert "✖ Spending over the budget denied by **Bob**." in layout_text(
            fake.message(ask["id"])
        )
        await ended(h, run_id)
        run = await svc.store.get_run(run_id)
        assert run.status is RunStatus.FAILED
        await fake.wait_until(
            lambda: any("did not approve going over" in t for t in h.thread_texts(thread["id"])),
            10,
        )
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_an_ask_whose_run_was_cancelled_loses_its_buttons_at_the_first_click(
    make_services, real_redis
) -> None:
    """Cancelled while it waited: anybody's click redraws the ask saying the request
    ended undecided, without buttons; nothing is told in private, nothing planned."""
    from core.runs.control import cancel_run

    async with governed(make_services, real_redis) as h:
        fake, svc = h.fake, h.svc
        await answered(h, "What is the capital of France?")
        setting = await fake.slash("caramba", {"task": "budget $0.01"}, "bob")
        await fake.wait_ack(setting)
        ask, _ = await asked_over_budget(h)
        approve, _ = custom_ids(ask)
        run_id = approve.rsplit(":", 1)[1]
        assert (await cancel_run(svc, run_id, "U0BOB", name="Bob")).ok
        click = await fake.click(ask["id"], approve, "carol")
        await fake.wait_ack(click)
        await fake.wait_until(lambda: custom_ids(fake.message(ask["id"])) == [], 10)
        shown = layout_text(fake.message(ask["id"]))
        assert "ended before anybody decided about its spending (cancelled by Bob)" in shown
        assert click.followup_ids == []
        assert (await svc.store.get_run(run_id)).status is RunStatus.CANCELLED
    assert fake.pinged() == [] and fake.unguarded_mentions() == []
