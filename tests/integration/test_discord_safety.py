"""What the Discord bot must never do, offline: ping people (agent text with @everyone,
role and user mentions), answer bots (unless allowed), lose a post to a 429; and the
slash command, acknowledged within Discord's 3 s, starting the same flow."""

from __future__ import annotations

from typing import Any

import pytest

from core.llm.scripted import Reply, ScriptedModel, call
from core.types.run import RunStatus
from tests.fakes.discord_api import FakeDiscord
from tests.integration.test_discord_bot import harness, layout_text
from tests.integration.test_slack_http import responder
from tests.planning_helpers import ROUTE_PLAN, as_json, design

pytestmark = pytest.mark.integration
LOUD = "@everyone @here <@&{role}> <@{user}> **done** — fares: 49, 55, 61"


def loud_model(role: str, user: str) -> ScriptedModel:
    """The usual plan; the orchestrator's result mentions everyone it can."""

    def answer(request: Any) -> Reply:
        if request.agent_name == "Orchestrator":
            text = LOUD.format(role=role, user=user)
            return Reply(calls=(call("finish", {"result": text}),))
        return responder(request)

    model = ScriptedModel(responder=answer)
    model.script("router", ROUTE_PLAN)
    model.script("planner", as_json(design()))
    return model


async def test_agent_text_with_everyone_and_mentions_pings_nobody(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        role, user = fake.role_id("approver"), fake.person("carol").id
    async with harness(make_services, real_redis, model=loud_model(role, user)) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Compare fares @everyone **now**")
        card, run_id = await h.card()
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await h.runs_end()
        thread = fake.thread_of(asked)
        assert thread is not None and thread["name"] == "Compare fares @everyone **now**"
        result = fake.channel_messages(thread["id"])[-1]
        assert "fares: 49, 55, 61" in result["content"]
        assert "\\*\\*done\\*\\*" in result["content"], "markdown escaped"
        assert "@\u200beveryone" in result["content"]
        # A person's and a role's mention kept: Discord shows their names (pinging nobody).
        assert f"<@&{role}> <@{user}>" in result["content"]
    # Every message, edit, interaction reply and follow-up said: ping nobody.
    assert fake.pinged() == [] and fake.unguarded_mentions() == []
    sent = [r for r in fake.log if r.route in ("create_message", "edit_message")]
    assert sent and all(r.json["allowed_mentions"]["parse"] == [] for r in sent)


async def test_bots_are_ignored_unless_allowed(make_services, real_redis) -> None:
    async with FakeDiscord.serving() as fake:
        async with harness(make_services, real_redis, fake=fake) as h:
            await fake.mention("general", "robot", "Compare flights, says a bot.")
            await fake.mention("general", "alice", "Compare flights, says Alice.")
            await h.card()
            await h.bot.drain()
            titles = [layout_text(c.json).split("\n")[0] for c in h.cards()]
            assert titles == ["### Proposal: Compare flights, says Alice."]
            assert len(fake.requests("create_thread_from_message")) == 1
        await fake.wait_until(lambda: fake.gateway.connected() == 0)
        robot = fake.person("robot").id
        async with harness(make_services, real_redis, fake=fake, allow_bots=(robot,)) as h:
            await fake.mention("general", "robot", "Compare flights, says a bot.")
            await fake.wait_until(lambda: len(h.cards()) == 2, 10)
            assert "says a bot" in layout_text(h.cards()[1].json).split("\n")[0]


async def test_a_429_delays_but_loses_no_post(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Compare the three cheapest flights.")
        card, run_id = await h.card()
        thread = fake.thread_of(asked)
        assert thread is not None
        # Every kind of post in the thread meets a 429 once: status, milestones, result.
        fake.rate_limit("create_message", times=3, retry_after=0.2)
        fake.rate_limit("edit_message", times=2, retry_after=0.2)
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await h.runs_end()
        statuses = [r.status for r in fake.requests("create_message")]
        assert statuses.count(429) == 3
        assert [r.status for r in fake.requests("edit_message")].count(429) == 2
        texts = h.thread_texts(thread["id"])
        assert "Orchestrator says: 3 flights" in texts[-1]
        assert any("Run completed" in t for t in texts)
        # Each post arrived once: the 429s were waited out, not retried twice over.
        posted = [r for r in fake.requests("create_message") if r.status == 200]
        contents = [r.json.get("content") for r in posted]
        assert len(contents) == len(set(contents))
        assert (await h.svc.store.get_run(run_id)).status is RunStatus.COMPLETED


async def test_the_slash_command_is_deferred_and_opens_the_same_flow(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis, command_guild="") as h:
        fake = h.fake
        names = sorted(c["name"] for c in fake.commands[None])
        assert names == ["caramba", "caramba-budget", "caramba-schedule"], "synced on start"
        inter = await fake.slash("caramba", {"task": "Compare flights to @everyone"}, "alice")
        card, run_id = await h.card()
        assert inter.callback_type == 5 and inter.ack_ms is not None and inter.ack_ms < 3000
        assert inter.original_id is not None
        said = fake.message(inter.original_id)
        assert said["content"].startswith("Alice asked: Compare flights to @\u200beveryone")
        thread = fake.thread_of(said)
        assert thread is not None and card["channel_id"] == thread["id"]
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await h.runs_end()
        assert "Orchestrator says" in h.thread_texts(thread["id"])[-1]
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_a_bare_mention_gets_help_and_mentions_of_people_stay_as_names(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        bare = await fake.mention("general", "alice", "")
        await fake.wait_until(lambda: len(fake.requests("create_message")) == 1)
        (help_reply,) = fake.requests("create_message")
        assert "Mention me with a task" in help_reply.json["content"]
        assert str(help_reply.json["message_reference"]["message_id"]) == bare["id"]
        assert fake.thread_of(bare) is None and not fake.requests("add_reaction")

        bob = fake.person("bob").id
        await fake.mention("general", "alice", f"Plan a trip with <@{bob}>.")
        _, run_id = await h.card()
        run = await h.svc.store.get_run(run_id)
        assert run.task == "Plan a trip with @Bob."


async def test_posts_and_edits_keep_within_the_channels_message_buckets(
    make_services, real_redis
) -> None:
    """Discord's per-channel limit on message creates and edits (here 2 a second): the
    status edits are coalesced, discord.py waits for the bucket, nothing is refused."""
    async with FakeDiscord.serving(message_limit=(2, 1.0)) as fake:
        async with harness(make_services, real_redis, fake=fake, status_interval_s=1.0) as h:
            asked = await fake.mention("general", "alice", "Compare the cheapest flights.")
            card, run_id = await h.card()
            await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
            await h.runs_end(timeout_s=30)
            thread = fake.thread_of(asked)
            assert thread is not None
            texts = h.thread_texts(thread["id"])
    sent = [r for r in fake.log if r.route in ("create_message", "edit_message")]
    assert sent and all(r.status == 200 for r in sent)
    in_thread = [r.at for r in sent if r.params["channel_id"] == thread["id"]]
    assert len(in_thread) > 2 and in_thread[-1] - in_thread[0] >= 0.9, "waited for the bucket"
    assert any("Run completed" in t for t in texts)
    assert "Orchestrator says: 3 flights" in texts[-1]
