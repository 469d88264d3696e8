"""Schedules at the terminal (``caramba schedule watch``, bots/console/schedules.py):
a console schedule fires under a fake clock and its firing and result are printed; a
Slack schedule's firing is not; a changed one waits, or is approved with --approve."""

from __future__ import annotations

import asyncio
import io

import pytest
from rich.console import Console

from bots.console.schedules import Watch
from core.config import load_settings
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import schedules as people
from core.runs.control import approve_run, propose_run
from core.schedules.clock import FakeClock
from core.types.agent import AgentSpec
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunStatus
from core.types.schedules import Scheduled
from tests.helpers import collect

pytestmark = pytest.mark.integration
ME = Person("console", "ana", approver=True)
TERMINAL = Place(platform="console", workspace="console", channel="console")
SLACK = Place(platform="slack", workspace="T1", channel="C1")
MONDAY_8 = 1764576000.0


def finishing() -> ScriptedModel:
    return ScriptedModel(
        responder=lambda request: Reply(calls=(call("finish", {"result": "7 tickets <b>"}),))
    )


async def _until(check, timeout_s: float = 15) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("approve", [False, True])
async def test_the_console_shows_its_firings(approve: bool, make_services, real_redis) -> None:
    svc = make_services(load_settings(redis={"url": ""}), finishing(), redis=real_redis)
    source = await propose_run(
        svc, "Count tickets", AgentSpec(name="Counter", tools=("finish",)), requested_by="console"
    )
    assert (await approve_run(svc, source, "console")).ok
    await collect(svc, source)
    clock = FakeClock(MONDAY_8)
    for place in (TERMINAL, SLACK):
        made = await people.schedule(
            svc, ME, place, from_run=source, when="every day at 9:00", budget_usd=1, clock=clock
        )
        assert isinstance(made, Scheduled)
    out = io.StringIO()
    watch = Watch(svc, Console(file=out, width=200), ME, approve=approve, clock=clock)
    await watch.start()
    clock.at = MONDAY_8 + 3600
    assert await watch.once() == 1, "the console's firing only"
    await _until(lambda: watch.shown == 1)
    text = out.getvalue()
    assert "Scheduled run (every day at 9:00) by ana: Count tickets — running now." in text
    assert "✓ Count tickets: 7 tickets <b>" in text
    assert text.count("Scheduled run") == 1

    # A new budget: the next firing waits for approval, or is approved here.
    (mine,) = (await people.listed(svc, TERMINAL)).schedules
    await people.edit(svc, mine.id, ME, budget_usd=2)
    clock.at += 86400
    assert await watch.once() == 1
    text = out.getvalue()
    assert "waits for approval (its cohort or budget changed)" in text
    if approve:
        assert "Approved by ana." in text
        await _until(lambda: watch.shown == 2)
    else:
        assert "caramba schedule watch --approve" in text
        kept = await people.store(svc).get(mine.id)
        assert kept is not None and kept.last_run_id is not None
        run = await svc.store.get_run(kept.last_run_id)
        assert run.status is RunStatus.PROPOSED
