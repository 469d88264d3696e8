"""Deciding about a run from Discord, offline (a real discord.py client against the local
Discord, real Redis, the scripted model, inline turns): refusals only the clicker sees,
the edit select and modal validated by core, Cancel, answers to agents' questions, and
the card's buttons working after the bot restarted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.llm.scripted import ScriptedModel
from core.runs import people
from core.runs.outcomes import Refused
from core.types.people import Person
from core.types.run import RunStatus
from tests.fakes import discord_limits as limits
from tests.fakes.discord_api import FakeDiscord
from tests.integration.test_discord_bot import Harness, custom_ids, harness, layout_text
from tests.integration.test_slack_http import asking_design, waiting_for

pytestmark = pytest.mark.integration
Json = dict[str, Any]
FLIGHTS = "Compare the three cheapest flights."


def ephemeral_texts(h: Harness, user: str) -> list[str]:
    """What the bot said to ``user`` alone (interaction replies and follow-ups)."""
    person = h.fake.person(user).id
    return [
        m["content"]
        for m in h.fake.messages.values()
        if m["flags"] & 64
        and any(
            i.user_id == person and m["id"] in (i.original_id, *i.followup_ids)
            for i in h.fake.interactions.values()
        )
    ]


async def test_an_unauthorised_click_is_refused_in_private_naming_the_requester(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        await h.fake.mention("general", "alice", FLIGHTS)
        card, run_id = await h.card()
        for action in ("approve", "reject", "edit"):
            click = await h.fake.click(card["id"], f"caramba:{action}:{run_id}", "carol")
            await h.fake.wait_ack(click)
        await h.bot.drain()
        await h.fake.wait_until(lambda: len(ephemeral_texts(h, "carol")) == 3)
        refusals = ephemeral_texts(h, "carol")
        assert all(r.startswith("Only Alice, who asked,") for r in refusals), refusals
        assert all(str(h.fake.person("alice").id) not in r for r in refusals)
        run = await h.svc.store.get_run(run_id)
        assert run.status is RunStatus.PROPOSED
        assert custom_ids(h.fake.message(card["id"])), "the card keeps its buttons"


def modal_selects(fake: FakeDiscord, custom_id: str) -> dict[str, Json]:
    """The selects of the modal shown as ``custom_id``, each inside its label."""
    modal, _ = fake.modals[custom_id]
    labels = [c for c in modal["components"] if c["type"] == limits.LABEL]
    return {label["component"]["custom_id"]: label["component"] for label in labels}


def shown(select: Json) -> list[str]:
    return [o["value"] for o in select["options"] if o.get("default")]


async def test_edit_picks_an_agent_refuses_a_bad_budget_and_changes_the_agent_that_runs(
    make_services, real_redis
) -> None:
    model = waiting_for({"Orchestrator": "Lead A", "Lead A": "Scout A"})
    async with harness(make_services, real_redis, model=model) as h:
        fake = h.fake
        await fake.mention("general", "alice", FLIGHTS)
        card, run_id = await h.card()
        edit = await fake.click(card["id"], f"caramba:edit:{run_id}", "alice")
        await fake.wait_ack(edit)
        assert edit.ephemeral and edit.original_id is not None
        picker = fake.message(edit.original_id)
        select = picker["components"][0]["components"][0]
        scout = next(o["value"] for o in select["options"] if o["label"] == "Scout A")
        pick = await fake.select(picker["id"], select["custom_id"], [scout], "alice")
        assert (await fake.wait_ack(pick)).json["type"] == 9, "the modal"
        modal = f"caramba:modal:{run_id}"
        selects = modal_selects(fake, modal)
        # The configured models ([llm] model and [llm.models]) and the role's default.
        models = [o["value"] for o in selects["model"]["options"]]
        assert {"openai/big", "openai/gpt-4o-mini", "openai/planner", "(default)"} <= set(models)

        bad = await fake.submit_modal(modal, {"tokens": "lots"}, "alice")
        await fake.wait_ack(bad)
        await fake.wait_until(lambda: bool(bad.followup_ids))
        said = fake.message(bad.followup_ids[0])
        assert said["flags"] & 64 and "Scout A (token budget)" in said["content"]

        again = await fake.select(picker["id"], select["custom_id"], [scout], "alice")
        await fake.wait_ack(again)
        values = {"model": ["openai/big"], "prompt": "Cite every fare's source."}
        good = await fake.submit_modal(modal, values, "alice")
        await fake.wait_ack(good)
        await fake.wait_until(lambda: bool(good.followup_ids))
        assert "Saved" in fake.message(good.followup_ids[0])["content"]
        await fake.wait_until(lambda: "edited by Alice" in layout_text(fake.message(card["id"])))
        assert "openai/big" in layout_text(fake.message(card["id"]))

        approve = await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await fake.wait_ack(approve)
        await h.runs_end()
    model = h.svc.llm
    assert isinstance(model, ScriptedModel)
    scouts = [r for r in model.requests if r.agent_name == "Scout A"]
    assert scouts and all(r.model == "openai/big" for r in scouts)
    assert "Cite every fare's source." in (scouts[0].messages[0].content or "")


async def test_an_agents_edit_button_opens_its_form_whose_selects_change_model_and_tools(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        await fake.mention("general", "alice", FLIGHTS)
        card, run_id = await h.card()
        opened = await people.editable(h.svc, run_id, Person(fake.person("alice").id, "Alice"))
        assert not isinstance(opened, Refused)
        scout = next(a for a in opened.agents if a.name == "Scout A")
        button = f"caramba:agent:{run_id}:{scout.id}"
        assert button in custom_ids(card), "an Edit button beside the agent"
        click = await fake.click(card["id"], button, "alice")
        assert (await fake.wait_ack(click)).json["type"] == 9, "its form at once"
        modal = f"caramba:modal:{run_id}"
        selects = modal_selects(fake, modal)
        assert shown(selects["tools"]) == list(scout.tools)
        offered = [o["value"] for o in selects["tools"]["options"]]
        assert set(offered) >= set(h.svc.tools.names()[:20]), "the registry's tools"
        added = next(t for t in offered if t not in scout.tools)
        tools = [*list(scout.tools)[1:], added]
        submit = await fake.submit_modal(
            modal, {"model": ["openai/planner"], "tools": tools}, "alice"
        )
        await fake.wait_ack(submit)
        await fake.wait_until(lambda: bool(submit.followup_ids))
        assert "Saved" in fake.message(submit.followup_ids[0])["content"]
        run = await h.svc.store.get_run(run_id)
        assert run.cohort is not None
        edited = next(a for a in run.cohort.agents if a.id == scout.id)
        assert edited.model == "openai/planner" and set(edited.tools) == set(tools)
        await fake.wait_until(lambda: "openai/planner" in layout_text(fake.message(card["id"])))
        assert run.status is RunStatus.PROPOSED


async def test_a_question_is_answered_by_a_reply_in_the_thread(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, plan=asking_design()) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Book a flight: which airport is best?")
        card, run_id = await h.card()
        thread = fake.thread_of(asked)
        assert thread is not None
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")

        def said(text: str) -> bool:
            return any(text in t for t in h.thread_texts(thread["id"]))

        await fake.wait_until(lambda: said("BER or a nearby airport?"), 10)
        answer = await fake.reply_in_thread(thread, "alice", "BER, please")
        await fake.wait_until(lambda: said("BER, please") and len(h.thread_texts(thread["id"])) > 4)
        await h.runs_end()
        assert fake.message(answer["id"])["reactions"][0]["emoji"]["name"] == "✅"
        assert (await h.svc.store.get_run(run_id)).status is RunStatus.COMPLETED


async def test_cancel_stops_a_run_and_only_for_those_who_may(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, plan=asking_design()) as h:
        fake = h.fake
        # The agent waits for an answer; Carol may not cancel, Bob (an approver) may.
        asked = await fake.mention("general", "alice", "Another flight: which airport?")
        second, run_2 = await h.card()
        await fake.click(second["id"], f"caramba:approve:{run_2}", "alice")
        thread_2 = fake.thread_of(asked)
        assert thread_2 is not None

        def status_message() -> dict | None:
            for m in fake.channel_messages(thread_2["id"]):
                if f"caramba:cancel:{run_2}" in json.dumps(m["components"]):
                    return m
            return None

        await fake.wait_until(lambda: status_message() is not None)
        status = status_message()
        assert status is not None
        refused = await fake.click(status["id"], f"caramba:cancel:{run_2}", "carol")
        await fake.wait_ack(refused)
        await fake.wait_until(lambda: bool(refused.followup_ids))
        assert "Only Alice" in fake.message(refused.followup_ids[0])["content"]
        await fake.click(status["id"], f"caramba:cancel:{run_2}", "bob")
        await h.runs_end()
        assert (await h.svc.store.get_run(run_2)).status is RunStatus.CANCELLED
        assert any("Run cancelled" in t for t in h.thread_texts(thread_2["id"]))
        # The run's end names who cancelled it, never their id.
        said = "\n".join(h.thread_texts(thread_2["id"]))
        assert "cancelled by Bob" in said and fake.person("bob").id not in said


async def test_a_restarted_bot_answers_the_cards_buttons_and_resumes_the_relay(
    make_services, real_redis
) -> None:
    async with FakeDiscord.serving() as fake:
        async with harness(make_services, real_redis, fake=fake) as h:
            await fake.mention("general", "alice", FLIGHTS)
            card, run_id = await h.card()
        await fake.wait_until(lambda: fake.gateway.connected() == 0)
        # A new process: its bot never sent the card, yet answers its buttons.
        async with harness(make_services, real_redis, fake=fake) as h:
            # An agent's Edit button (a V2 section's accessory) opens its form here too.
            agent = next(c for c in custom_ids(card) if c.startswith("caramba:agent:"))
            opened = await fake.click(card["id"], agent, "alice")
            assert (await fake.wait_ack(opened)).json["type"] == 9
            click = await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
            assert (await fake.wait_ack(click)).json["type"] == 6
            await fake.wait_until(lambda: custom_ids(fake.message(card["id"])) == [])
            assert "Approved by Alice." in layout_text(fake.message(card["id"]))
            # It took the run's relay up too: the progress and the result reach the thread.
            await h.runs_end()
            run = await h.svc.store.get_run(run_id)
            assert run.status is RunStatus.COMPLETED
            texts = h.thread_texts(card["channel_id"])
            assert any("Run completed" in t for t in texts)
            assert "Orchestrator says: 3 flights" in texts[-1]
