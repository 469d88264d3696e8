"""Schedules from the web chat (demo mode, through HTTP; the browser's side is in
test_web_chat_schedules_browser.py): "schedule …" typed where a request goes makes one
(listed beside every chat, escaped); words that are no schedule, a missing task, a bad
budget are said back; Pause / Resume / Delete; a schedule made by someone else is theirs
(refused, by name); forms from other sites and pages without an operator's token are
refused; other requests still go on as requests; a firing is a new chat; Redis not
answering is said in words."""

from __future__ import annotations

import re

from bots.web.chat_place import WEB_PLACE
from bots.web.chat_schedules import HOW, Typed, typed
from core.runs import schedules as plans
from core.runs.firings import fire_due
from core.schedules.clock import FakeClock
from core.state.client import Unreachable as RedisConnectionError
from core.state.schedules import ScheduleStore
from core.types.people import Person
from core.types.schedules import Scheduled
from tests.integration.test_web_chat import ORIGIN, chat_app, client, post, until

ANA = Person("U0ANA", "Ana")


def test_typed_words_read_as_a_schedule() -> None:
    assert typed("summarise the tickets") is None
    assert typed("schedule every weekday at 9:00: summarise the open tickets, $2") == Typed(
        "every weekday at 9:00", "summarise the open tickets", 2.0
    )
    assert typed("Schedule 0 9 * * 1-5 | ping the ops team (up to $0.50)") == Typed(
        "0 9 * * 1-5", "ping the ops team", 0.5
    )
    assert typed("schedule every monday at 8:30 — plan the week") == Typed(
        "every monday at 8:30", "plan the week", None
    )
    assert typed("schedule every day") == HOW
    assert typed("schedule") == HOW
    assert typed("schedule : nothing") == HOW


async def test_typed_schedule_listed_paused_resumed_deleted(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await post(
            c, "/chat", task="schedule every weekday at 9:00: sum up <b>tickets</b>, $2"
        )
        assert made.status_code == 200, made.text
        assert "Scheduled by the web chat" in made.text
        assert "&lt;b&gt;tickets&lt;/b&gt;" in made.text and "<b>tickets" not in made.text
        (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
        assert s.task == "sum up <b>tickets</b>" and s.budget_usd == 2.0
        assert s.rule.cron == "0 9 * * 1,2,3,4,5" and s.owner == "web"

        # Beside every chat: the new-chat page lists it, with its buttons.
        page = (await c.get("/chat")).text
        assert 'id="schedules"' in page and "every weekday at 9:00" in page
        assert f'action="/chat/schedules/{s.id}"' in page

        paused = await post(c, f"/chat/schedules/{s.id}", action="pause")
        assert paused.status_code == 200 and "Paused by the web chat" in paused.text
        assert (await plans.listed(svc, WEB_PLACE)).schedules[0].paused
        assert 'value="resume"' in paused.text
        resumed = await post(c, f"/chat/schedules/{s.id}", action="resume")
        assert "Resumed by the web chat" in resumed.text
        assert not (await plans.listed(svc, WEB_PLACE)).schedules[0].paused

        weird = await post(c, f"/chat/schedules/{s.id}", action="explode")
        assert weird.status_code == 400 and "pause, resume, edit or delete" in weird.text

        gone = await post(c, f"/chat/schedules/{s.id}", action="delete")
        assert "Deleted by the web chat" in gone.text
        assert (await plans.listed(svc, WEB_PLACE)).schedules == ()
        again = await post(c, f"/chat/schedules/{s.id}", action="delete")
        assert again.status_code == 400 and "no longer exists" in again.text


async def test_what_is_no_schedule_is_said_back(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        blursday = await post(c, "/chat", task="schedule every blursday at 9: sum up")
        assert blursday.status_code == 400
        assert "I could not read “every blursday at 9” as a schedule" in blursday.text
        half = await post(c, "/chat", task="schedule every day")
        assert half.status_code == 400 and "when, a colon, the task" in half.text
        form = await post(c, "/chat/schedules", when="every day at 8:00", task="x", budget="lots")
        assert form.status_code == 400 and "“lots” is not an amount" in form.text
        assert 'value="every day at 8:00"' in form.text, "what was typed is kept"
        too_much = await post(
            c, "/chat/schedules", when="every day at 8:00", task="x", budget="999"
        )
        assert too_much.status_code == 400 and "more than the $20.00 allowed" in too_much.text
        no_task = await post(c, "/chat/schedules", when="every day at 8:00")
        assert no_task.status_code == 400 and "Say when, and what to run." in no_task.text
        assert (await plans.listed(svc, WEB_PLACE)).schedules == ()

        # Any other request is still a request: a new chat.
        asked = await post(c, "/chat", task="Budget our offsite")
        assert asked.status_code == 303 and re.match(r"/chat/run_", asked.headers["location"])


async def test_someone_elses_schedule_is_theirs(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await plans.schedule(svc, ANA, WEB_PLACE, task="ping ops", when="every day at 7:00")
        assert isinstance(made, Scheduled)
        refused = await post(c, f"/chat/schedules/{made.schedule.id}", action="delete")
        assert refused.status_code == 400
        assert "Only Ana, who made this schedule, or one of the approvers" in refused.text
        assert len((await plans.listed(svc, WEB_PLACE)).schedules) == 1


async def test_other_sites_and_strangers_are_refused(settings) -> None:
    async with chat_app(settings, local=False) as (app, _svc), client(app) as c:
        assert (await c.get("/chat/schedules")).status_code == 403
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await plans.schedule(svc, ANA, WEB_PLACE, task="ping ops", when="every day at 7:00")
        assert isinstance(made, Scheduled)
        elsewhere = {"origin": "https://evil.example"}
        for path, data in (
            ("/chat", {"task": "schedule every day at 9:00: x"}),
            ("/chat/schedules", {"when": "every day at 9:00", "task": "x"}),
            (f"/chat/schedules/{made.schedule.id}", {"action": "pause"}),
        ):
            answer = await c.post(path, data=data, headers=elsewhere)
            assert answer.status_code == 403, path
        assert not (await plans.listed(svc, WEB_PLACE)).schedules[0].paused
        assert ORIGIN.startswith("http://127.0.0.1")


async def test_a_firing_is_a_new_chat(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await post(c, "/chat", task="schedule every day at 9:00: Budget our offsite, $2")
        assert made.status_code == 200, made.text
        (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
        assert await fire_due(svc, FakeClock(s.next_at + 1)) == 1
        fired = (await plans.listed(svc, WEB_PLACE)).schedules[0].last_run_id
        assert fired is not None
        # Its own chat: which schedule fired, then the run as a request's (the card: a
        # task never approved asks first).
        page = await until(c, f"/chat/{fired}", r"b-approve")
        assert "Scheduled run (every day at 9:00) by the web chat: it waits for approval" in page
        assert "Budget our offsite" in page
        listed = await until(c, "/chat", fired)
        assert f'href="/chat/{fired}"' in listed, "in the past chats"


async def test_the_words_every_platform_takes(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await post(
            c, "/chat", task="schedule add every day at 6:00 | water <i>plants</i> | $1"
        )
        assert made.status_code == 200 and "Scheduled by the web chat" in made.text
        assert "&lt;i&gt;plants" in made.text
        (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
        assert (s.task, s.budget_usd) == ("water <i>plants</i>", 1.0)
        listed = await post(c, "/chat", task="schedule list")
        assert f"• {s.id}: “every day at 6:00”" in listed.text
        paused = await post(c, "/chat", task=f"schedule pause {s.id}")
        assert "Paused by the web chat" in paused.text
        assert (await plans.listed(svc, WEB_PLACE)).schedules[0].paused


async def test_redis_not_answering_is_said_in_words(settings, monkeypatch) -> None:
    async def down(*_args: object, **_kwargs: object) -> None:
        raise RedisConnectionError("Connection refused")

    async with chat_app(settings) as (app, _svc), client(app) as c:
        monkeypatch.setattr(ScheduleStore, "in_place", down)
        monkeypatch.setattr(ScheduleStore, "add", down)
        page = await c.get("/chat")
        assert page.status_code == 200, "the chat still shows"
        assert "The schedules could not be read just now." in page.text
        made = await post(c, "/chat", task="schedule every day at 9:00: sum up")
        assert made.status_code == 503
        assert "Redis did not answer" in made.text and "Connection refused" not in made.text
        listing = await c.get("/chat/schedules")
        assert listing.status_code == 200
        assert "The schedules could not be read just now." in listing.text


async def test_an_edit_form_changes_what_differs_and_only_for_its_owner(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        made = await post(c, "/chat", task="schedule every day at 9:00: Budget our offsite, $2")
        assert made.status_code == 200, made.text
        (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
        page = (await c.get("/chat/schedules")).text
        assert f'id="edit-when-{s.id}"' in page and 'value="every day at 9:00"' in page
        assert f'id="edit-budget-{s.id}" name="budget" value="2"' in page
        path = f"/chat/schedules/{s.id}"
        same = await post(c, path, action="edit", when="every day at 9:00", tz="UTC", budget="2")
        assert same.status_code == 400 and "Nothing changed" in same.text
        bad = await post(c, path, action="edit", when="every day at 9:00", budget="lots")
        assert bad.status_code == 400 and "“lots” is not an amount" in bad.text
        unread = await post(c, path, action="edit", when="every <b>blursday</b>", budget="2")
        assert unread.status_code == 400 and "every &lt;b&gt;blursday&lt;/b&gt;" in unread.text
        moved = await post(
            c, path, action="edit", when="every day at 7:00", tz="Europe/Paris", budget="2"
        )
        assert moved.status_code == 200 and "Changed by the web chat" in moved.text
        assert "asks for approval again" not in moved.text
        kept = (await plans.listed(svc, WEB_PLACE)).schedules[0]
        assert (kept.rule.words, kept.rule.tz, kept.budget_usd) == (
            "every day at 7:00",
            "Europe/Paris",
            2,
        )
        raised = await post(c, path, action="edit", when="every day at 7:00", budget="3")
        assert raised.status_code == 200 and "asks for approval again" in raised.text
        # Ana's schedule: the web chat is neither its owner nor an approver.
        hers = await plans.schedule(svc, ANA, WEB_PLACE, task="ping ops", when="every day at 7:00")
        assert isinstance(hers, Scheduled)
        refused = await post(
            c, f"/chat/schedules/{hers.schedule.id}", action="edit", when="every day at 8:00"
        )
        assert refused.status_code == 400 and "Only Ana, who made this schedule" in refused.text
        again = await plans.listed(svc, WEB_PLACE)
        assert next(x for x in again.schedules if x.id == hers.schedule.id).rule.words == (
            "every day at 7:00"
        )
        gone = await post(c, "/chat/schedules/sch_nothing", action="edit", when="every day")
        assert gone.status_code == 400 and "no longer exists" in gone.text
