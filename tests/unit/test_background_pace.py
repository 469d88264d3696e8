"""The background loop's pace: quick while ticks find work, slow when idle, and timers on
time at either pace (the soonest timer bounds every sleep; one this process schedules
wakes the loop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from core.llm.scripted import ScriptedModel
from core.process import background
from core.process.background import Pace, run_background
from core.runs import control
from core.services import Services
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect

# The loop's own pace is far slower than the test: only a timer can bring its tick in time.
SLOW = {"background_interval_s": 50.0, "background_idle_s": 50.0}


def test_the_pace_slows_after_empty_ticks_and_quickens_with_work() -> None:
    settings = make_settings(
        scheduler={"background_interval_s": 0.2, "background_idle_ticks": 3, "background_idle_s": 2}
    )
    pace = Pace(settings.scheduler)
    seen = []
    for busy in (False, False, False, False, True, False):
        seen.append(pace.interval)
        pace.ticked(busy, None)
    assert seen == [0.2, 0.2, 0.2, 2.0, 2.0, 0.2]


def test_the_idle_pace_keeps_the_watchdogs_period() -> None:
    settings = make_settings(
        scheduler={"background_idle_ticks": 1, "background_idle_s": 5, "watchdog_s": 1}
    )
    pace = Pace(settings.scheduler)
    pace.ticked(False, None)
    assert pace.interval == 1


def test_a_timer_added_here_sooner_than_the_next_tick_wakes_the_sleep() -> None:
    pace = Pace(make_settings().scheduler)
    pace.ticked(False, 500.0)
    pace.added(900.0)
    assert pace.soonest == 500.0 and not pace.woken.is_set()
    pace.added(100.0)
    assert pace.soonest == 100.0 and pace.woken.is_set()


def test_a_timer_added_during_a_tick_is_not_forgotten_by_its_stale_read() -> None:
    pace = Pace(make_settings().scheduler)
    pace.ticking()
    pace.added(100.0)  # after the tick read the timers
    pace.ticked(False, 500.0)
    assert pace.soonest == 100.0


@pytest.fixture
async def looping(
    make_services: Any, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[..., Any]]:
    """Services on fakeredis with their background loop running, once its first tick is
    done (its sleep is then up to SLOW)."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def start(svc: Services) -> None:
        ticked = asyncio.Event()
        real_tick = background.tick

        async def tick(svc: Services, *rest: Any) -> tuple[bool, float | None]:
            try:
                return await real_tick(svc, *rest)
            finally:
                ticked.set()

        monkeypatch.setattr(background, "tick", tick)
        tasks.append(asyncio.create_task(run_background(svc, stop)))
        await asyncio.wait_for(ticked.wait(), 10)
        await asyncio.sleep(0)

    yield start
    stop.set()
    await asyncio.gather(*tasks)


async def expired(svc: Services, run_id: str) -> None:
    (event,) = await collect(svc, run_id, timeout_s=10)
    assert isinstance(event, RunFinished) and event.status is RunStatus.CANCELLED


async def test_a_timer_this_process_schedules_wakes_an_idle_loop(make_services, looping) -> None:
    settings = make_settings(scheduler=SLOW, approval={"expire_s": 0.2})
    svc = make_services(settings, ScriptedModel())
    await looping(svc)
    run_id = await control.propose_run(svc, "t", AgentSpec(name="Solo"), requested_by="@ana")
    await expired(svc, run_id)


async def test_a_timer_in_the_set_fires_when_due_not_at_the_idle_pace(
    make_services, looping
) -> None:
    settings = make_settings(scheduler=SLOW, approval={"expire_s": 0.3})
    svc = make_services(settings, ScriptedModel())
    # Scheduled before the loop runs, as by another process: the loop reads it.
    run_id = await control.propose_run(svc, "t", AgentSpec(name="Solo"), requested_by="@ana")
    await looping(svc)
    await expired(svc, run_id)
