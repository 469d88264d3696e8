"""Schedules' Discord messages and form within Discord's limits: a list of more schedules
than fit (long words, tasks and names) stays within 40 components and 4,000 characters,
counting the rest; the "Run this every…" form within a modal's limits; the buttons'
custom ids within 100 characters and read back by their templates."""

from __future__ import annotations

import discord

from bots.discord.schedule_items import (
    EditScheduleButton,
    EditScheduleModal,
    EveryButton,
    EveryModal,
    ScheduleButton,
)
from bots.discord.schedule_list import SHOWN, list_view
from core.types.place import Place
from core.types.schedules import Rule, Schedule
from tests.fakes import discord_limits as limits

PLACE = Place(platform="discord", workspace="1", channel="42", channel_name="#ops")


def schedule(i: int, paused: bool = False) -> Schedule:
    return Schedule(
        id=f"sch_{i:010d}",
        owner="7",
        owner_name="N" * 300,
        place=PLACE,
        task="t" * 4000,
        rule=Rule(words="w" * 200, cron="0 9 * * *", tz="Europe/Paris"),
        budget_usd=20.0,
        paused=paused,
        next_at=1_796_025_600,
    )


def sent(view: discord.ui.LayoutView) -> dict[str, object]:
    params = discord.http.handle_message_parameters(view=view, flags=discord.MessageFlags())
    return dict(params.payload or {})


def test_a_long_list_stays_within_the_limits() -> None:
    many = tuple(schedule(i, paused=i % 2 == 1) for i in range(25))
    body = sent(list_view(many, "42"))
    assert limits.check_message(body, 0, creating=True) is None, body
    every = limits.v2_components(body["components"])  # type: ignore[arg-type]
    assert len(every) <= 40
    texts = [c["content"] for c in every if c.get("type") == 10]
    assert texts[0] == "### Schedules in <#42> (25)"
    assert texts[-1].startswith(f"… and {25 - SHOWN} more")
    ids = [c["custom_id"] for c in every if c.get("custom_id")]
    assert ids[:6] == [
        "caramba:sched:pause:sch_0000000000",
        "caramba:sched:edit:sch_0000000000",
        "caramba:sched:delete:sch_0000000000",
        "caramba:sched:resume:sch_0000000001",
        "caramba:sched:edit:sch_0000000001",
        "caramba:sched:delete:sch_0000000001",
    ]
    assert all(len(i) <= 100 for i in ids)


def test_an_empty_list_says_how_to_make_one() -> None:
    body = sent(list_view((), "42"))
    assert limits.check_message(body, 0, creating=True) is None
    assert "No schedules here yet" in str(body["components"])


def test_the_form_and_the_buttons_are_within_the_limits() -> None:
    modal = EveryModal("run_" + "a" * 40, "E" * 300, "1")
    assert limits.check_modal(modal.to_dict()) is None, modal.to_dict()
    assert EveryButton("run_abc").custom_id == "caramba:every:run_abc"
    assert EveryButton.__discord_ui_compiled_template__.match("caramba:every:run_abc")
    template = ScheduleButton.__discord_ui_compiled_template__
    match = template.match("caramba:sched:resume:sch_0123456789")
    assert match is not None and match["action"] == "resume"
    assert template.match("caramba:sched:explode:sch_0123456789") is None
    assert template.match("caramba:sched:edit:sch_0123456789") is None, "Edit is its own"
    edit = EditScheduleButton.__discord_ui_compiled_template__.match("caramba:sched:edit:sch_1")
    assert edit is not None and edit["schedule"] == "sch_1"
    form = EditScheduleModal("sch_" + "a" * 60, "w" * 300, "E" * 300, "1")
    assert limits.check_modal(form.to_dict()) is None, form.to_dict()
