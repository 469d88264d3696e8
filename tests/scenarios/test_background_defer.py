"""The background loop holds back the work that can wait — recording ended runs in the
library — while its process runs turns, with either scheduler: an ended run is recorded
as soon as no turn runs, and after ``scheduler.background_defer_s`` even while one still
runs (always, eventually). Timers, intents and the watchdog are never held back."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.process import background
from core.process.background import Deferral, run_background
from core.runs.control import start_run
from core.scheduler.base import TurnJob
from core.scheduler.inline import InlineScheduler
from core.services import Services
from core.state.learning_marks import LearningMarks
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect
from tests.schedulers import SCHEDULERS


class HeldModel(ScriptedModel):
    """The scripted model (every agent finishes), except that agent "Held" stays in its
    model call until ``release`` is set: a turn running in the process meanwhile. Thread
    events: a Celery worker's turns run on a loop of their own."""

    def __init__(self) -> None:
        super().__init__(responder=lambda _: Reply(calls=(call("finish", {"result": "4"}),)))
        self.inside = threading.Event()
        self.release = threading.Event()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if request.agent_name == "Held":
            self.inside.set()
            await asyncio.to_thread(self.release.wait, 60)
        return await super().complete(request)


class Ticks:
    """Counts the background loop's ticks (in this process: the inline loop, or the
    Celery worker's runtime started by the test)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        inner = background.tick

        async def tick(svc: Services, *rest: Any) -> tuple[bool, float | None]:
            try:
                return await inner(svc, *rest)
            finally:
                self.count += 1

        monkeypatch.setattr(background, "tick", tick)

    async def wait(self, more: int) -> None:
        target = self.count + more
        await until(lambda: _true(self.count >= target), f"{more} more ticks")


async def _true(value: bool) -> bool:
    return value


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def looping(svc: Services) -> AsyncIterator[None]:
    """The background loop of an inline-scheduled test process (a Celery worker runs its
    own, given its runtime)."""
    if not isinstance(svc.scheduler, InlineScheduler):
        yield
        return
    stop = asyncio.Event()
    task = asyncio.create_task(run_background(svc, stop, svc.scheduler))
    try:
        yield
    finally:
        stop.set()
        await task


def defer_settings(folder: Path, defer_s: float) -> Any:
    return make_settings(
        library={"embedder": "hashing", "index_dir": str(folder)},
        scheduler={
            "background_interval_s": 0.05,
            "background_idle_s": 0.05,
            "background_defer_s": defer_s,
        },
    )


async def ended(svc: Services, run_id: str) -> None:
    events = await collect(svc, run_id, timeout_s=30)
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.COMPLETED


async def held_and_quick(svc: Services, model: HeldModel) -> tuple[str, str]:
    """Run "Held" (its turn stays in the model call) and, once it is inside, "Quick",
    which ends: the ids of both runs."""
    held = await start_run(svc, "held", AgentSpec(name="Held", tools=("finish",)))
    await until(lambda: _true(model.inside.is_set()), "the held turn's model call")
    quick = await start_run(svc, "quick", AgentSpec(name="Quick", tools=("finish",)))
    await ended(svc, quick)
    return held, quick


@SCHEDULERS
async def test_an_ended_run_waits_while_turns_run_and_is_recorded_once_none_does(
    services: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = Ticks(monkeypatch)
    model = HeldModel()
    svc = await services(defer_settings(tmp_path, defer_s=600), model)
    marks = LearningMarks(svc.store)
    async with looping(svc):
        try:
            held, quick = await held_and_quick(svc, model)
            await ticks.wait(5)  # ticks that found the ended run and held it back
            assert await marks.waiting(quick), "held back while a turn runs"
            assert not await marks.recorded(quick)
        finally:
            model.release.set()
        await ended(svc, held)
        # No turn runs now: both runs are recorded, long before background_defer_s.
        for run_id in (quick, held):
            await until(partial(marks.recorded, run_id), f"run {run_id} recorded")
        assert not await marks.waiting(quick)


@SCHEDULERS
async def test_held_back_work_runs_after_background_defer_s_while_a_turn_still_runs(
    services: Any, tmp_path: Path
) -> None:
    model = HeldModel()
    svc = await services(defer_settings(tmp_path, defer_s=0.3), model)
    marks = LearningMarks(svc.store)
    async with looping(svc):
        try:
            _, quick = await held_and_quick(svc, model)
            await until(lambda: marks.recorded(quick), "the ended run recorded")
            assert not model.release.is_set() and model.inside.is_set(), "a turn still runs"
        finally:
            model.release.set()


async def test_the_inline_scheduler_says_when_turns_run_and_when_the_last_ended() -> None:
    scheduler = InlineScheduler(4)
    gate, idle = asyncio.Event(), []

    async def handler(job: TurnJob) -> None:
        await gate.wait()

    scheduler.start(handler)
    unwatch = scheduler.watch_idle(lambda: idle.append(True))
    try:
        assert not scheduler.running()
        await scheduler.submit(TurnJob(run_id="r", agent_id="a", seq=1))
        await scheduler.submit(TurnJob(run_id="r", agent_id="b", seq=1))
        assert scheduler.running()
        deferral = Deferral(limit_s=60, turns=scheduler)
        assert not deferral.may_run()
        deferral.held()
        assert not deferral.may_run(), "held back, within the limit"
        past = time.monotonic() - 61
        assert Deferral(limit_s=60, turns=scheduler, since=past).may_run(), "held too long"
        assert Deferral(limit_s=0, turns=scheduler).may_run(), "0: never held back"
        assert Deferral(limit_s=60).may_run(), "no turns to wait for"
        assert idle == []
        gate.set()
        await scheduler.join()
        assert idle == [True], "told once, when the last of the two ended"
        assert not scheduler.running() and deferral.may_run()
    finally:
        unwatch()
        await scheduler.stop()
