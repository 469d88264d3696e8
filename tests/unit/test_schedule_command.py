"""The shared ``schedule …`` command (bots/chat/schedule_command.py) over embedded
services: every verb, unruly words, someone else's schedule, and Redis failing."""

from __future__ import annotations

import re

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from bots.chat.schedule_command import answer, is_schedule
from core.llm.scripted import ScriptedModel
from core.state.schedules import ScheduleStore
from core.types.people import Person
from core.types.place import Place
from tests.conftest import make_settings

ANA, BOB = Person("UANA", "Ana"), Person("UBOB", "Bob")
OPS = Place(platform="web", workspace="web", channel="ops", channel_name="#ops")


def test_only_schedule_words_are_taken() -> None:
    assert is_schedule("schedule list") and is_schedule("  Schedule add x")
    assert not is_schedule("schedules") and not is_schedule("compare flights on schedule")


async def test_every_verb_and_unruly_words(make_services) -> None:
    svc = make_services(make_settings(schedules={"max_per_channel": 2}), ScriptedModel())

    async def say(text: str, who: Person = ANA) -> str:
        return await answer(svc, who, OPS, text)

    assert "No schedules here yet" in await say("schedule list")
    assert "Say one of" in await say("schedule")
    assert "Say one of" in await say("schedule frobnicate 3")
    assert "Say when and what" in await say("schedule add every day at 9")
    assert "every blursday" in await say("schedule add every blursday | count tickets")
    assert "not an amount" in await say("schedule add every day at 9 | count | lots")
    assert "more than $0" in await say("schedule add every day at 9 | count | $-3")
    assert "time zone “Mars/Olympus”" in await say(
        "schedule add every day | count | 1 | Mars/Olympus"
    )
    made = await say("schedule add every weekday at 9:00 | count the tickets | $2 | Europe/Paris")
    assert made.startswith("Scheduled by Ana") and "$2.00 a firing" in made
    sid = re.search(r"id (sch_\w+)", made).group(1)  # type: ignore[union-attr]
    assert sid in await say("schedule list")
    assert "Which one?" in await say("schedule pause")
    refused = await say(f"schedule pause {sid}", BOB)
    assert refused.startswith("Only Ana, who made this schedule")
    assert "I can change when" in await say(f"schedule edit {sid} | colour blue")
    assert "Say what to change" in await say(f"schedule edit {sid}")
    assert "asks for approval again" in await say(f"schedule edit {sid} | budget 3")
    assert (await say(f"schedule pause {sid}")).startswith("Paused by Ana")
    assert (await say(f"schedule resume {sid}")).startswith("Resumed by Ana")
    assert "no longer exists" in await say("schedule delete sch_nothere")
    await say("schedule add every day at 10:00 | second | 1")
    full = await say("schedule add every day at 11:00 | third | 1")
    assert "#ops has 2 schedules already" in full
    assert (await say(f"schedule delete {sid}")).startswith("Deleted by Ana")


async def test_redis_failing_is_said_in_one_line(make_services, monkeypatch) -> None:
    svc = make_services(make_settings(), ScriptedModel())

    async def down(*args: object, **kwargs: object) -> object:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(ScheduleStore, "add", down)
    monkeypatch.setattr(ScheduleStore, "in_place", down)
    said = await answer(svc, ANA, OPS, "schedule add every day at 9 | count | 1")
    assert said.startswith("I could not reach the schedules (ConnectionError)")
    assert "nothing was changed" in said
    assert "ConnectionError" in await answer(svc, ANA, OPS, "schedule list")


@pytest.mark.parametrize(
    "text", ["schedule add \x00 | x", "schedule edit | | |", "schedule " + "a" * 5000]
)
async def test_odd_input_never_raises(make_services, text: str) -> None:
    svc = make_services(make_settings(), ScriptedModel())
    assert isinstance(await answer(svc, ANA, OPS, text), str)
