"""The background loop wakes for schedules, not only for timers: its first look
(``core.state.idle_probe``) says whether a schedule is due and when the next one is, so
an idle loop (its pace far slower than the test) fires a schedule at its slot, and a tick
with no schedule due does not look for one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process import background
from core.process.background import run_background
from core.runs import firings
from core.runs import schedules as people
from core.schedules.rules import parse
from core.state.idle_probe import probe
from core.types.place import Place
from core.types.schedules import NotUnderstood, Schedule
from tests.conftest import make_settings

OPS = Place(platform="slack", workspace="T1", channel="C1", channel_name="#ops")
# The loop's own pace is far slower than the test: only the schedule's slot can wake it.
SLOW = {"background_interval_s": 50.0, "background_idle_s": 50.0, "watchdog_s": 50.0}


def due_at(sid: str, at: float) -> Schedule:
    rule = parse("every 15 minutes", None, load_settings(redis={"url": ""}).schedules)
    assert not isinstance(rule, NotUnderstood)
    return Schedule(
        id=sid, owner="UANA", owner_name="Ana", place=OPS, task="Count the open tickets",
        rule=rule, budget_usd=1, next_at=at,
    )  # fmt: skip


async def test_the_first_look_says_whether_a_schedule_is_due_and_when_the_next_is(
    make_services: Any, any_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=any_redis, start=False)
    now = 1_900_000_000.0
    looked = await probe(svc.store, now)
    assert not looked.schedules_due and looked.next_schedule is None
    assert (await probe(svc.store)).schedules_due, "without the time it says look"
    states = people.store(svc)
    assert await states.add(due_at("sch_later", now + 30.5), 10)
    assert await states.add(due_at("sch_much_later", now + 900), 10)
    looked = await probe(svc.store, now)
    assert not looked.schedules_due and looked.next_schedule == now + 30.5
    assert await states.add(due_at("sch_now", now), 10)
    looked = await probe(svc.store, now)
    assert looked.schedules_due and looked.next_schedule == now + 30.5
    # A tick (real time, before all these slots) does not look for due schedules, and
    # says when the soonest slot is: the loop sleeps no later.
    called: list[int] = []

    async def fire_due(*args: Any) -> int:
        called.append(1)
        return 0

    monkeypatch.setattr(firings, "fire_due", fire_due)
    assert time.time() < now
    assert (await background.tick(svc))[1] == now
    assert called == []


async def test_an_idle_loop_wakes_for_a_schedules_slot(
    make_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_services(make_settings(scheduler=SLOW), ScriptedModel())
    looked_for: list[float] = []
    real_fire_due = firings.fire_due

    async def fire_due(svc: Any, *args: Any) -> int:
        looked_for.append(time.time())
        return await real_fire_due(svc, *args)

    monkeypatch.setattr(firings, "fire_due", fire_due)
    slot = time.time() + 1.0
    assert await people.store(svc).add(due_at("sch_soon", slot), 10)
    stop = asyncio.Event()
    loop = asyncio.create_task(run_background(svc, stop))
    try:
        for _ in range(200):  # at most 20 s, far less than the loop's 50 s pace
            kept = await people.store(svc).get("sch_soon")
            if kept is not None and kept.firings:
                break
            await asyncio.sleep(0.1)
        assert kept is not None and kept.firings == 1 and kept.last_fired_at is not None
        assert kept.last_fired_at >= slot
        assert looked_for and min(looked_for) >= slot, "no tick looked before the slot"
    finally:
        stop.set()
        await loop
