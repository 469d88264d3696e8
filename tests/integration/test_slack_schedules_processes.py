"""A schedule made from Slack fired by two REAL worker processes (issue 28).

The bot (this process) serves the real Slack app against the Slack fake and hands turns
to Celery; two ``python -m tasks.worker`` processes share the test's Redis, each running
the background loop that fires schedules and the turns. Their schedule clock is a fake
one shared through a file (``CARAMBA_TEST_CLOCK_FILE``, read by the launcher's
``SystemClock.now``; timers, leases and everything else keep real time): the test moves
time by writing the file. Three firings make exactly three runs and three results each
in its own thread; unchanged, no card; after an edit, the card again; both workers down
over a slot and ten minutes past it, then started again: one firing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings, load_settings
from core.process.wiring import build_services
from core.runs import firings
from core.runs import schedules as people
from core.services import Services
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import REDIS_URL
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.processes import (
    Process,
    cleanup_all,
    stop_all,
    unique_prefix,
    worker_env,
)
from tests.integration.test_slack_http import (
    ANA,
    Harness,
    quick_library,
    scripted,
    serve_bot,
)
from tests.integration.test_slack_schedules import announcements, ephemeral, results
from tests.integration.test_slack_slash import ANA_USER, slash
from tests.planning_helpers import design
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
MONDAY_8 = 1764576000.0  # Monday 1 December 2025, 08:00 UTC (in the past: never due by
# the workers' real-time probe alone; only their fake schedule clock reaches a slot)
SLOT = MONDAY_8 + 3600
# A real worker whose schedule clock is the file's, and whose turns use the scripted model
# of the Slack tests (planning the task once, every agent finishing at once).
LAUNCHER = textwrap.dedent(
    """
    import os, runpy, sys
    from pathlib import Path
    from core.schedules import clock
    CLOCK = Path(os.environ["CARAMBA_TEST_CLOCK_FILE"])
    clock.SystemClock.now = lambda self: float(CLOCK.read_text())
    import tasks.runtime
    from tests.integration.test_slack_schedules_processes import worker_services
    tasks.runtime.build_services = worker_services
    sys.argv = ["tasks.worker", *sys.argv[1:]]
    runpy.run_module("tasks.worker", run_name="__main__", alter_sys=True)
    """
)


def shared_settings(base: Settings, library_dir: str) -> Settings:
    """``base`` (redis, celery, scheduler) with the Slack tests' planning and library."""
    plan = quick_library(planning_settings(), library_dir)
    return base.model_copy(
        update={"planning": plan.planning, "llm": plan.llm, "library": plan.library}
    )


def worker_services(settings: Settings, scheduler: Any) -> Services:
    """The worker's services (called in the worker process, by ``tasks.runtime``)."""
    s = shared_settings(settings, os.environ["CARAMBA_TEST_LIBRARY_DIR"])
    return build_services(s, scheduler, llm=scripted(design()))


class Workers:
    """Two real worker processes sharing the fake schedule clock in ``clock_file``."""

    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.env, self.tmp, self.started = env, tmp, 0
        self.procs: list[Process] = []
        self.logs: list[str] = []  # the output of every worker stopped
        self.clock_file = tmp / "clock"

    def at(self, when: float) -> None:
        tmp = self.clock_file.with_suffix(".new")
        tmp.write_text(repr(when))
        tmp.replace(self.clock_file)  # atomic: a reader never sees half a number

    def start(self) -> None:
        for _ in range(2):
            self.started += 1
            lib = self.tmp / f"library{self.started}"
            env = {
                **self.env,
                "CARAMBA_TEST_CLOCK_FILE": str(self.clock_file),
                "CARAMBA_TEST_LIBRARY_DIR": str(lib),
            }
            args = [sys.executable, "-c", LAUNCHER, "--concurrency=2"]
            self.procs.append(Process(args, env, f"worker{self.started}"))
        for proc in self.procs:
            proc.wait_for(" ready.", timeout=120)  # litellm imports on a loaded machine

    def stop(self) -> None:
        codes = stop_all(self.procs)  # together: each warm shutdown takes about a second
        for proc, code in zip(self.procs, codes, strict=True):
            assert code == 0, proc.tail()
            self.logs.append(proc.output())
            proc.cleanup()
        self.procs = []


@contextlib.contextmanager
def workers(env: dict[str, str]) -> Iterator[Workers]:
    tmp = Path(tempfile.mkdtemp(prefix="caramba-sched-"))
    w = Workers(env, tmp)
    w.at(MONDAY_8)
    try:
        yield w
    finally:
        cleanup_all(w.procs)
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.asynccontextmanager
async def bot(prefix: str, slack: FakeSlackAPI, library_dir: str) -> AsyncIterator[Harness]:
    """The Slack bot in this process, handing turns to the workers through Celery."""
    base = load_settings(redis={"url": REDIS_URL, "key_prefix": prefix})
    s = shared_settings(base, library_dir)
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    scheduler = CeleryScheduler(make_app(s), s)
    svc = build_services(s, scheduler, llm=scripted(design()))
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        await svc.aclose()
        await scheduler.aclose()


async def until(what: str, check: Callable[[], Any], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.1)


async def test_two_real_workers_fire_a_slack_schedule_on_a_fake_clock() -> None:
    lib = tempfile.mkdtemp(prefix="caramba-lib-")
    slack = await FakeSlackAPI().start()
    try:
        with unique_prefix() as prefix:
            env = worker_env(
                redis__url=REDIS_URL,
                redis__key_prefix=prefix,
                scheduler__background_idle_s="0.5",
            )
            with workers(env) as w:
                async with bot(prefix, slack, lib) as h:
                    await _scenario(h, w)
    finally:
        await slack.stop()
        shutil.rmtree(lib, ignore_errors=True)


async def _scenario(h: Harness, w: Workers) -> None:
    svc = h.bot.svc

    async def fired(n: int) -> None:
        async def enough() -> bool:
            return len(await firings.read_firings(svc, "0-0")) >= n

        await until(f"{n} firings", enough)

    w.start()
    h.slack.users[ANA] = ANA_USER
    h.bot.firings.start()
    await slash(h, "schedule add every day at 9:00 | Count the open tickets | $2 | UTC")
    assert (await ephemeral(h, 1)).startswith("Scheduled by Ana")
    (made,) = (await people.listed(svc, None)).schedules
    await people.store(svc).update(made.id, lambda s: s.model_copy(update={"next_at": SLOT}))

    # First firing: planned by a worker, the card asks for approval.
    w.at(SLOT)
    await fired(1)
    card, run_id = await h.card()
    (first,) = announcements(h)
    assert "waits for approval" in first["text"] and not first.get("thread_ts")
    await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
    await h.slack.wait_for(lambda: len(results(h)) == 1, timeout_s=30)
    await h.runs_end(30)

    # Two more days, unchanged: they run without a card.
    for day in (1, 2):
        w.at(SLOT + day * 86400)
        await fired(day + 1)
        await h.slack.wait_for(lambda d=day: len(results(h)) == d + 1, timeout_s=30)
        await h.runs_end(30)
    assert len(h.cards()) == 1, "no new approval while unchanged"
    assert all("running now" in a["text"] for a in announcements(h)[1:])
    assert len(results(h)) == len(announcements(h)) == 3, "three results in the channel"
    threads = {r["thread_ts"] for r in results(h)}
    assert len(threads) == 3 and card["thread_ts"] in threads, "a thread per firing"
    assert len(await firings.read_firings(svc, "0-0")) == 3, "exactly three runs"

    # An edit of the budget: the next firing asks again.
    await slash(h, f"schedule edit {made.id} | budget 3")
    assert "asks for approval again" in await ephemeral(h, 2)
    w.at(SLOT + 3 * 86400)
    await fired(4)
    await h.slack.wait_for(lambda: len(h.cards()) == 2, timeout_s=30)
    assert "waits for approval" in announcements(h)[-1]["text"]
    run_id = h.cards()[-1]["blocks"][-1]["elements"][0]["value"]
    await h.click("caramba_approve", run_id, ANA, "1700000000.000300")
    await h.slack.wait_for(lambda: len(results(h)) == 4, timeout_s=30)
    await h.runs_end(30)

    # Both workers down over the next slot and ten minutes past it; started again: once.
    w.stop()
    fired_by = [log.count(" fired run ") for log in w.logs]
    assert sum(fired_by) == 4, fired_by  # by the workers: this process fires nothing
    w.at(SLOT + 4 * 86400 + 600)
    w.start()
    await fired(5)
    await h.slack.wait_for(lambda: len(results(h)) == 5, timeout_s=30)
    await h.runs_end(30)
    await asyncio.sleep(1.5)  # three idle ticks of each worker: nothing more fires
    ran = [f.run_id for _, f in await firings.read_firings(svc, "0-0")]
    assert len(ran) == len(set(ran)) == 5, "one firing for the missed slot"
    assert len(h.cards()) == 2 and len(results(h)) == 5
    for rid in ran:
        assert (await svc.store.get_run(rid)).status is RunStatus.COMPLETED
    (after,) = (await people.listed(svc, None)).schedules
    assert after.firings == 5 and after.next_at == SLOT + 5 * 86400
    w.stop()
    assert sum(log.count(" fired run ") for log in w.logs[2:]) == 1, "once on recovery"
