"""Schedules from Discord (a real discord.py client against the local Discord, real Redis,
the scripted model): ``/caramba-schedule`` adds, lists, edits, pauses, resumes and
deletes; the list's buttons act for whoever clicks — Carol (no approver) is refused by
name, Bob (an approver by role) may; unread words, a missing task or schedule are said
back, privately; Redis not answering is told, not left as a failed interaction; "Run this
every…" under a finished run's result opens a form whose schedule runs that team again,
and its firing (under a fake clock) is a new message in the channel with the run in a
thread from it, to its result; two bot processes post a firing once. Nothing pings
anyone."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from bots.discord.schedules import Schedules
from core.runs import schedules as plans
from core.runs.firings import fire_due
from core.schedules.clock import FakeClock
from core.state.client import Unreachable
from core.state.schedules import ScheduleStore
from core.types.people import Person
from core.types.run import RunStatus
from core.types.schedules import Schedule
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_records import FakeInteraction
from tests.integration.test_discord_bot import Harness, buttons_of, custom_ids, harness, layout_text

pytestmark = pytest.mark.integration
Json = dict[str, Any]
COMMAND = "caramba-schedule"


async def told(fake: FakeDiscord, inter: FakeInteraction, timeout_s: float = 10) -> Json:
    """The one thing the bot said back to ``inter`` (only its person sees it)."""
    await fake.wait_ack(inter)
    if inter.callback_type == 4:
        message = fake.message(inter.original_id or "")
    else:
        await fake.wait_until(lambda: bool(inter.followup_ids), timeout_s)
        message = fake.message(inter.followup_ids[-1])
    assert message["flags"] & 64, "said to the person alone"
    return message


def text_of(message: Json) -> str:
    return layout_text(message) or message["content"]


async def schedules_in(h: Harness) -> tuple[Schedule, ...]:
    return (await plans.listed(h.svc)).schedules


async def slash(h: Harness, who: str, **options: Any) -> Json:
    inter = await h.fake.slash(COMMAND, options, who)
    return await told(h.fake, inter)


async def test_add_list_and_change_with_the_owner_approver_rule(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        added = await slash(
            h,
            "alice",
            action="add",
            when="every weekday at 9:00",
            task="Sum up the *open* tickets @everyone",
            budget=2.5,
            tz="Europe/Paris",
        )
        assert text_of(added).startswith("✅ Scheduled by Alice: “every weekday at 9:00”")
        assert "\\*open\\*" in text_of(added) and "@\u200beveryone" in text_of(added)
        (s,) = await schedules_in(h)
        general = fake.channel("general")
        assert (s.place.platform, s.place.channel) == ("discord", general["id"])
        assert s.place.channel_name == "#general" and s.budget_usd == 2.5
        assert s.rule.tz == "Europe/Paris" and s.owner == str(fake.person("alice").id)

        listed = await slash(h, "carol", action="list")
        assert listed["flags"] & (1 << 15)
        assert f"Schedules in <#{general['id']}> (1)" in layout_text(listed)
        assert f"`{s.id}`" in layout_text(listed) and "by Alice" in layout_text(listed)
        assert custom_ids(listed) == [
            f"caramba:sched:pause:{s.id}",
            f"caramba:sched:edit:{s.id}",
            f"caramba:sched:delete:{s.id}",
        ]

        # Carol made nothing here and approves nothing: refused, by name, privately.
        refused = await fake.click(listed["id"], f"caramba:sched:pause:{s.id}", "carol")
        said = await told(fake, refused)
        assert said["content"].startswith("🚫 Only Alice, who made this schedule")
        assert not (await schedules_in(h))[0].paused

        # Bob, an approver by role, may: the list is redrawn with Resume.
        paused = await fake.click(listed["id"], f"caramba:sched:pause:{s.id}", "bob")
        said = await told(fake, paused)
        assert said["content"].startswith("✅ Paused by Bob")
        assert (await schedules_in(h))[0].paused
        redrawn = fake.message(listed["id"])
        assert f"caramba:sched:resume:{s.id}" in custom_ids(redrawn)
        assert "paused" in layout_text(redrawn)

        resumed = await slash(h, "alice", action="resume", schedule=s.id)
        assert text_of(resumed).startswith("✅ Resumed by Alice")
        edited = await slash(h, "alice", action="edit", schedule=s.id, budget=3.0)
        assert "asks for approval again" in text_of(edited)
        assert (await schedules_in(h))[0].budget_usd == 3.0
        carol_edit = await slash(h, "carol", action="edit", schedule=s.id, when="every day at 7:00")
        assert text_of(carol_edit).startswith("🚫 Only Alice")

        listed = await slash(h, "alice", action="list")
        gone = await fake.click(listed["id"], f"caramba:sched:delete:{s.id}", "alice")
        assert (await told(fake, gone))["content"].startswith("✅ Deleted by Alice")
        assert await schedules_in(h) == ()
        assert "No schedules here yet" in layout_text(fake.message(listed["id"]))
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_what_is_missing_or_unread_is_said_back(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        blursday = await slash(h, "alice", action="add", when="every blursday", task="x")
        assert "I could not read “every blursday” as a schedule" in text_of(blursday)
        no_task = await slash(h, "alice", action="add", when="every day at 9:00")
        assert "Say what to run" in text_of(no_task)
        no_when = await slash(h, "alice", action="add", task="sum up")
        assert "Say when" in text_of(no_when)
        no_id = await slash(h, "alice", action="pause")
        assert "Say which schedule" in text_of(no_id)
        unknown = await slash(h, "alice", action="delete", schedule="sch_nothing")
        assert "no longer exists" in text_of(unknown)
        too_much = await slash(
            h, "alice", action="add", when="every day at 9:00", task="x", budget=500.0
        )
        assert "more than the $20.00 allowed" in text_of(too_much)
        empty = await slash(h, "alice")
        assert "No schedules here yet" in layout_text(empty)
        assert await schedules_in(h) == ()


async def finished_run(h: Harness) -> tuple[str, Json]:
    """A run asked for by Alice, approved by Bob, run to its end: its id and result."""
    fake = h.fake
    asked = await fake.mention("general", "alice", "Compare the three cheapest flights.")
    card, run_id = await h.card()
    click = await fake.click(card["id"], f"caramba:approve:{run_id}", "bob")
    await fake.wait_ack(click)
    await h.runs_end()
    thread = fake.thread_of(asked)
    assert thread is not None
    return run_id, fake.channel_messages(thread["id"])[-1]


async def test_run_this_every_then_a_firing_in_its_own_thread(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        run_id, result = await finished_run(h)
        every = f"caramba:every:{run_id}"
        assert every in custom_ids(result)
        assert [b["label"] for b in buttons_of(result)] == ["Run this every…"]

        opened = await fake.click(result["id"], every, "alice")
        await fake.wait_ack(opened)
        assert opened.callback_type == 9, "the form answers the click"
        form = f"caramba:every-form:{run_id}"
        bad = await fake.submit_modal(
            form, {"when": "every day at 9:00", "budget": "lots"}, "alice"
        )
        assert "“lots” is not an amount" in (await told(fake, bad))["content"]
        again = await fake.click(result["id"], every, "alice")
        await fake.wait_ack(again)
        done = await fake.submit_modal(
            form, {"when": "every day at 9:00", "tz": "UTC", "budget": "1.5"}, "alice"
        )
        assert (await told(fake, done))["content"].startswith("✅ Scheduled by Alice")
        (s,) = await schedules_in(h)
        assert s.from_run == run_id and s.budget_usd == 1.5
        assert s.place.channel == fake.channel("general")["id"], "the channel, not the thread"

        # Its slot comes: a new message in #general, the run in a thread from it.
        before = {m["id"] for m in fake.channel_messages("general")}
        assert await fire_due(h.svc, FakeClock(s.next_at + 1)) == 1
        fired = (await schedules_in(h))[0].last_run_id
        assert fired is not None and fired != run_id

        def announced() -> list[Json]:
            return [m for m in fake.channel_messages("general") if m["id"] not in before]

        await fake.wait_until(lambda: bool(announced()), 10)
        (post,) = announced()
        assert post["content"].startswith("Scheduled run (every day at 9:00) by **Alice**")
        assert "running now" in post["content"]
        await fake.wait_until(lambda: fake.thread_of(post) is not None, 10)
        thread = fake.thread_of(post)
        assert thread is not None

        def ended() -> bool:
            return any("Run completed" in t for t in h.thread_texts(thread["id"]))

        await fake.wait_until(ended, 30)  # the run relayed there, to its end
        await h.runs_end(30)
        run = await h.svc.store.get_run(fired)
        assert run.status is RunStatus.COMPLETED and run.requested_by == s.owner
        assert "Orchestrator says: 3 flights" in h.thread_texts(thread["id"])[-1]
        assert not any(
            "caramba:approve:" in json.dumps(m["components"])
            for m in fake.channel_messages(thread["id"])
        )
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_the_words_every_platform_takes_through_caramba(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        task = "schedule add every day at 6:00 | water *plants* @here | $1"
        made = await told(h.fake, await h.fake.slash("caramba", {"task": task}, "alice"))
        assert made["content"].startswith("Scheduled by Alice: “every day at 6:00”")
        assert "water \\*plants\\* @\u200bhere" in made["content"]
        (s,) = await schedules_in(h)
        assert (s.task, s.budget_usd) == ("water *plants* @here", 1.0)
        listed = await told(h.fake, await h.fake.slash("caramba", {"task": "schedule list"}, "bob"))
        assert s.id.replace("_", "\\_") in listed["content"], "shown as sch_…"
        paused = await h.fake.slash("caramba", {"task": f"schedule pause {s.id}"}, "carol")
        assert (await told(h.fake, paused))["content"].startswith("Only Alice")
        assert not h.fake.thread_of(made["id"]), "no run, no thread"
    assert h.fake.pinged() == []


async def test_two_bot_processes_post_a_firing_once(make_services, real_redis) -> None:
    async with (
        FakeDiscord.serving() as fake,
        harness(make_services, real_redis, fake=fake, command_guild="") as one,
        harness(make_services, real_redis, fake=fake, command_guild="") as two,
    ):
        added = await slash(one, "alice", action="add", when="every day at 9:00", task="Sum up")
        assert text_of(added).startswith("✅ Scheduled by Alice")
        (s,) = await schedules_in(one)
        before = {m["id"] for m in fake.channel_messages("general")}
        assert await fire_due(one.svc, FakeClock(s.next_at + 1)) == 1
        assert await fire_due(two.svc, FakeClock(s.next_at + 1)) == 0, "one claim per slot"

        def announced() -> list[Json]:
            return [m for m in fake.channel_messages("general") if m["id"] not in before]

        await fake.wait_until(lambda: bool(announced()), 10)
        await asyncio.sleep(1.5)  # both processes had their read of the firings
        (post,) = announced()
        assert "it waits for approval" in post["content"], "a task never approved asks"
        await fake.wait_until(lambda: fake.thread_of(post) is not None, 10)
        thread = fake.thread_of(post)
        assert thread is not None

        def card() -> bool:
            return any(
                "caramba:approve:" in json.dumps(m["components"])
                for m in fake.channel_messages(thread["id"])
            )

        await fake.wait_until(card, 20)
    assert fake.pinged() == []


async def test_redis_not_answering_is_told_not_left_failing(
    make_services, real_redis, monkeypatch
) -> None:
    async def down(*_args: object, **_kwargs: object) -> None:
        raise Unreachable("Connection refused")

    async with harness(make_services, real_redis) as h:
        monkeypatch.setattr(ScheduleStore, "in_place", down)
        monkeypatch.setattr(ScheduleStore, "add", down)
        listed = await slash(h, "alice", action="list")
        assert listed["content"] == "❌ That did not work (ConnectionError)."
        added = await slash(h, "alice", action="add", when="every day at 9:00", task="x")
        assert added["content"] == "❌ That did not work (ConnectionError)."


async def test_a_firing_where_no_thread_may_open_is_shown_in_the_channel(
    make_services, real_redis, caplog
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        fake.forbid("create_thread_from_message")  # the bot lacks Create Public Threads
        added = await slash(h, "alice", action="add", when="every day at 9:00", task="Sum up")
        assert text_of(added).startswith("✅ Scheduled by Alice")
        (s,) = await schedules_in(h)
        general = fake.channel("general")["id"]
        before = {m["id"] for m in fake.channel_messages(general)}
        assert await fire_due(h.svc, FakeClock(s.next_at + 1)) == 1

        def new() -> list[Json]:
            return [m for m in fake.channel_messages(general) if m["id"] not in before]

        def card() -> bool:
            return any("caramba:approve:" in json.dumps(m["components"]) for m in new())

        await fake.wait_until(card, 20)  # the run's card, in the channel itself
        post = new()[0]
        assert post["content"].startswith("Scheduled run (every day at 9:00) by **Alice**")
        assert fake.thread_of(post) is None
        assert fake.requests("create_thread_from_message")[0].status == 403
        assert any("no thread in" in r.getMessage() for r in caplog.records)
    assert fake.pinged() == []


def test_a_discord_dm_is_a_place_no_schedule_is_made_in() -> None:
    """The fake Discord has no DMs: the place an interaction without a guild gets (what
    ``/caramba-schedule`` and "Run this every…" pass to core) is one core refuses."""
    dm = SimpleNamespace(channel=SimpleNamespace(id=77, name=""), channel_id=77, guild=None)
    dm.guild_id = None
    place = Schedules(None)._place(dm)  # type: ignore[arg-type]
    assert (place.workspace, place.channel) == ("dm", "77") and plans.direct(place)


async def test_edit_on_a_list_opens_a_form_for_the_owner_or_an_approver(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        fake = h.fake
        await slash(h, "alice", action="add", when="every weekday at 9:00", task="Sum up", budget=2)
        (s,) = await schedules_in(h)
        listed = await slash(h, "carol", action="list")
        edit, form = f"caramba:sched:edit:{s.id}", f"caramba:sched-form:{s.id}"
        assert [b["label"] for b in buttons_of(listed)] == ["Pause", "Edit", "Delete"]

        # Carol may not change it: told why, privately, and no form opens.
        refused = await fake.click(listed["id"], edit, "carol")
        assert (await told(fake, refused))["content"].startswith("🚫 Only Alice")
        assert form not in fake.modals

        # Alice: the form holds the schedule as it is.
        opened = await fake.click(listed["id"], edit, "alice")
        await fake.wait_ack(opened)
        assert opened.callback_type == 9, "the form answers the click"
        shown = json.dumps(fake.modals[form][0])
        assert "every weekday at 9:00" in shown and '"UTC"' in shown and '"2"' in shown

        async def submit(values: dict[str, str], who: str = "alice") -> str:
            """The form opened again (each is answered once) and sent with ``values``."""
            if form not in fake.modals:
                await fake.wait_ack(await fake.click(listed["id"], edit, who))
            return str((await told(fake, await fake.submit_modal(form, values, who)))["content"])

        assert "“lots” is not an amount" in await submit({"budget": "lots"})
        nothing = "🚫 Nothing changed: the form held the schedule as it is."
        assert await submit({}) == nothing, "an unchanged form changes nothing"
        assert "“every blursday”" in await submit({"when": "every blursday"})
        said = await submit({"when": "every day at 7:00", "tz": "Europe/Paris"})
        assert said.startswith("✅ Changed by Alice") and "asks for approval again" not in said
        kept = (await schedules_in(h))[0]
        assert (kept.rule.words, kept.rule.tz, kept.budget_usd) == (
            "every day at 7:00",
            "Europe/Paris",
            2,
        )

        # Bob, an approver by role, changes the budget: the next firing asks again.
        said = await submit({"budget": "$3.50"}, "bob")
        assert said.startswith("✅ Changed by Bob") and "asks for approval again" in said
        assert (await schedules_in(h))[0].budget_usd == 3.5

        # Deleted meanwhile: the button says so.
        await plans.delete(h.svc, s.id, Person("x", "Boss", approver=True))
        gone = await fake.click(listed["id"], edit, "alice")
        assert "no longer exists" in (await told(fake, gone))["content"]
    assert fake.pinged() == [] and fake.unguarded_mentions() == []
