"""Schedules in core (issue 28), real Redis, the scripted model, a fake clock: words and
cron read or refused with a hint, the owner/approver guard, firing exactly once per slot
across two worker processes' services, re-approval only after a change, a downtime made
up once, and the overlap policy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.config import load_settings
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import firings
from core.runs import schedules as people
from core.runs.control import approve_run, propose_run, reject_run
from core.runs.outcomes import Refused
from core.schedules.clock import FakeClock
from core.schedules.rules import parse
from core.services import Services
from core.types.agent import AgentSpec
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunStatus
from core.types.schedules import Changed, NotUnderstood, Schedule, Scheduled
from tests.helpers import collect

pytestmark = pytest.mark.integration
ANA, BOB = Person("UANA", "Ana"), Person("UBOB", "Bob")
BOSS = Person("UBOSS", "Boss", approver=True)
OPS = Place(
    platform="slack", workspace="T1", channel="C1", workspace_name="Acme", channel_name="#ops"
)
# Monday 1 December 2025, 08:00 UTC.
MONDAY_8 = 1764576000.0


def finishing() -> ScriptedModel:
    return ScriptedModel(
        responder=lambda request: Reply(calls=(call("finish", {"result": "3 tickets open"}),))
    )


def test_words_and_cron_are_read_or_refused_with_a_plain_hint() -> None:
    s = load_settings(redis={"url": ""}).schedules
    weekday = parse("every weekday at 9:00", "Europe/Paris", s)
    assert not isinstance(weekday, NotUnderstood)
    assert weekday.cron == "0 9 * * 1,2,3,4,5" and weekday.tz == "Europe/Paris"
    cron = parse("30 8 * * 1", None, s)
    assert not isinstance(cron, NotUnderstood) and cron.tz == "UTC"
    blursday = parse("every blursday", None, s)
    assert isinstance(blursday, NotUnderstood)
    assert "“every blursday”" in blursday.hint and "every weekday at 9:00" in blursday.hint
    too_often = parse("every minute", None, s)
    assert isinstance(too_often, NotUnderstood) and "every 5 minutes" in too_often.hint
    for bad in ("", "   ", "61 * * * *", "x" * 500, "every 3 weeks"):
        assert isinstance(parse(bad, None, s), NotUnderstood), bad
    zone = parse("every day at 9", "Mars/Olympus", s)
    assert isinstance(zone, NotUnderstood) and "Mars/Olympus" in zone.hint


async def _finished_run(svc: Services) -> str:
    run_id = await propose_run(
        svc,
        "Count the open tickets",
        AgentSpec(name="Counter", tools=("finish",)),
        requested_by=ANA.id,
    )
    assert (await approve_run(svc, run_id, ANA.id)).ok
    await collect(svc, run_id)
    assert (await svc.store.get_run(run_id)).status is RunStatus.COMPLETED
    return run_id


async def _ended(svc: Services, run_id: str) -> RunStatus:
    await collect(svc, run_id, timeout_s=15)
    return (await svc.store.get_run(run_id)).status


async def test_only_the_owner_or_an_approver_changes_a_schedule(make_services, real_redis) -> None:
    svc = make_services(load_settings(redis={"url": ""}), finishing(), redis=real_redis)
    clock = FakeClock(MONDAY_8)
    made = await people.schedule(
        svc,
        ANA,
        OPS,
        task="Summarise the tickets",
        when="every weekday at 9:00",
        tz=None,
        budget_usd=2,
        clock=clock,
    )
    assert isinstance(made, Scheduled), made
    assert "Scheduled by Ana" in made.line and "Mon 1 Dec 09:00 (UTC)" in made.line
    sid = made.schedule.id
    refused = await people.edit(svc, sid, BOB, budget_usd=5)
    assert isinstance(refused, Refused)
    assert (
        refused.reason.startswith("Only Ana, who made this schedule")
        and "UANA" not in refused.reason
    )
    for act in (people.pause, people.delete):
        assert isinstance(await act(svc, sid, BOB), Refused)
    assert (await people.store(svc).get(sid)).budget_usd == 2  # type: ignore[union-attr]
    paused = await people.pause(svc, sid, BOSS)
    assert isinstance(paused, Changed) and "Paused by Boss" in paused.line
    assert await people.store(svc).due(MONDAY_8 + 7 * 86400) == []
    assert isinstance(await people.resume(svc, sid, ANA, clock=clock), Changed)
    bad = await people.edit(svc, sid, ANA, when="every blursday")
    assert isinstance(bad, NotUnderstood)
    assert isinstance(await people.edit(svc, sid, ANA, budget_usd=-1), Refused)
    assert isinstance(await people.edit(svc, sid, ANA, budget_usd=1000), Refused)
    assert isinstance(await people.schedule(svc, ANA, OPS, when="every day", budget_usd=1), Refused)
    listed = await people.listed(svc, OPS)
    assert [s.id for s in listed.schedules] == [sid] and "by Ana" in listed.lines[0]
    gone = await people.delete(svc, sid, ANA)
    assert isinstance(gone, Changed) and (await people.listed(svc, OPS)).schedules == ()


async def test_fires_once_per_slot_across_two_workers_and_asks_after_an_edit(
    make_services, real_redis
) -> None:
    settings = load_settings(redis={"url": ""})
    one = make_services(settings, finishing(), redis=real_redis)
    two = make_services(settings, finishing(), redis=real_redis)
    clock = FakeClock(MONDAY_8)
    source = await _finished_run(one)
    made = await people.schedule(
        one,
        ANA,
        OPS,
        from_run=source,
        when="every day at 9:00",
        tz="UTC",
        budget_usd=2,
        clock=clock,
    )
    assert isinstance(made, Scheduled)
    sid = made.schedule.id
    runs: list[str] = []
    for day in range(3):
        clock.at = MONDAY_8 + 3600 + day * 86400  # 09:00 each day
        fired = await asyncio.gather(*(firings.fire_due(s, clock) for s in (one, two, one, two)))
        assert sum(fired) == 1, "exactly one worker fires each slot"
        got = await firings.read_firings(one, "0-0")
        runs = [f.run_id for _, f in got]
        assert len(runs) == day + 1 and not got[-1][1].asks
        assert await _ended(one, runs[-1]) is RunStatus.COMPLETED, "ran without a new approval"
    assert len(set(runs)) == 3
    # Bob may not raise the budget; Ana may, and the next firing asks again.
    assert isinstance(await people.edit(one, sid, BOB, budget_usd=3), Refused)
    assert isinstance(await people.edit(one, sid, ANA, budget_usd=3), Changed)
    clock.at += 86400
    assert (
        sum(await asyncio.gather(firings.fire_due(one, clock), firings.fire_due(two, clock))) == 1
    )
    last = (await firings.read_firings(one, "0-0"))[-1][1]
    assert last.asks
    asked = await one.store.get_run(last.run_id)
    assert asked.status is RunStatus.PROPOSED and asked.budget is not None
    assert asked.place == OPS, "counted in the schedule's channel (the spend ledger)"
    assert asked.budget.cost_usd == 3
    assert (await approve_run(one, last.run_id, ANA.id)).ok
    assert await _ended(one, last.run_id) is RunStatus.COMPLETED
    # Approved: the next day runs at once again.
    clock.at += 86400
    assert await firings.fire_due(two, clock) == 1
    after = (await firings.read_firings(one, "0-0"))[-1][1]
    assert not after.asks and await _ended(one, after.run_id) is RunStatus.COMPLETED
    # Ten minutes of downtime over a slot, then recovery: one firing, not more.
    clock.at += 86400 + 600
    fired = [await firings.fire_due(s, clock) for s in (one, two, one)]
    assert sum(fired) == 1
    kept = await people.store(one).get(sid)
    assert kept is not None and kept.next_at == MONDAY_8 + 3600 + 6 * 86400
    assert kept.firings == 6


async def _slow_model() -> Any:
    return ScriptedModel(responder=lambda request: Reply(calls=(call("wait_for_messages", {}),)))


@pytest.mark.parametrize("policy", ["skip", "queue"])
async def test_an_overlapping_firing_is_skipped_or_queued(
    policy: str, make_services, real_redis
) -> None:
    settings = load_settings(redis={"url": ""}, schedules={"overlap": policy, "min_interval_s": 60})
    svc = make_services(settings, finishing(), redis=real_redis)
    source = await _finished_run(svc)
    clock = FakeClock(MONDAY_8)
    made = await people.schedule(
        svc, ANA, OPS, from_run=source, when="every 15 minutes", budget_usd=1, clock=clock
    )
    assert isinstance(made, Scheduled)
    sid = made.schedule.id
    clock.at = MONDAY_8 + 15 * 60
    # The first firing's run is left waiting for approval (changed task): still running.
    assert isinstance(await people.edit(svc, sid, ANA, task="Count the closed tickets"), Changed)
    assert await firings.fire_due(svc, clock) == 1
    first = (await firings.read_firings(svc, "0-0"))[-1][1]
    assert first.asks
    clock.at += 15 * 60
    assert await firings.fire_due(svc, clock) == 0, "the last run has not ended"
    kept = await people.store(svc).get(sid)
    assert kept is not None
    if policy == "skip":
        assert kept.next_at == clock.at + 15 * 60, "the slot was skipped"
    else:
        assert kept.next_at == clock.at, "the slot waits"
    assert (await approve_run(svc, first.run_id, ANA.id)).ok
    assert await _ended(svc, first.run_id) is RunStatus.COMPLETED
    fired = await firings.fire_due(svc, clock)
    assert fired == (0 if policy == "skip" else 1)
    assert len(await firings.read_firings(svc, "0-0")) == 1 + fired


async def test_schedules_that_cannot_fire_yet_never_starve_the_others(
    make_services, real_redis
) -> None:
    """``[schedules] max_per_tick`` due schedules a tick; queued ones whose run still runs
    go behind the others, so a schedule due later still fires at the next tick."""
    settings = load_settings(
        redis={"url": ""}, schedules={"overlap": "queue", "max_per_tick": 2, "min_interval_s": 60}
    )
    assert load_settings(redis={"url": ""}).schedules.max_per_tick == 100
    svc = make_services(settings, finishing(), redis=real_redis)
    source = await _finished_run(svc)
    waiting = await propose_run(
        svc, "Still waiting", AgentSpec(name="Counter", tools=("finish",)), requested_by=ANA.id
    )
    rule = parse("every 15 minutes", None, settings.schedules)
    assert not isinstance(rule, NotUnderstood)
    states = people.store(svc)

    def one(sid: str, next_at: float, last_run: str | None) -> Schedule:
        return Schedule(
            id=sid, owner=ANA.id, owner_name="Ana", place=OPS, task="Count them",
            from_run=source, rule=rule, budget_usd=1, next_at=next_at,
            last_run_id=last_run, overlap="queue",
        )  # fmt: skip

    for sid in ("sch_a", "sch_b", "sch_c"):  # queued behind a run that has not ended
        assert await states.add(one(sid, MONDAY_8, waiting), 10)
    assert await states.add(one("sch_late", MONDAY_8 + 60, None), 10)
    clock = FakeClock(MONDAY_8 + 120)
    assert await firings.fire_due(svc, clock) == 0, "the two longest due wait for their run"
    assert await firings.fire_due(svc, clock) == 1, "the next ones are reached, not the same two"
    late = await states.get("sch_late")
    assert late is not None and late.last_run_id is not None and late.next_at > clock.at
    for sid in ("sch_a", "sch_b", "sch_c"):
        kept = await states.get(sid)
        assert kept is not None and kept.next_at == MONDAY_8, "a queued slot still waits"
    # A queued one fires once its run has ended, whatever its place in the due set.
    assert (await reject_run(svc, waiting, ANA.id, "not now")).ok
    fired = 0
    for _ in range(2):
        fired += await firings.fire_due(svc, clock)
    assert fired == 3


async def test_a_schedule_is_refused_in_a_direct_message_in_plain_words(
    make_services, real_redis
) -> None:
    """Schedules post in a channel: a Slack DM (``D…``) or a Discord DM (no guild) is
    refused, saying where to ask; the console and the web chat are their own places."""
    svc = make_services(load_settings(redis={"url": ""}), finishing(), redis=real_redis)
    slack_dm = Place(
        platform="slack", workspace="T1", channel="D0ANA", channel_name="directmessage"
    )
    discord_dm = Place(platform="discord", workspace="dm", channel="1234567890")
    for place in (slack_dm, discord_dm):
        said = await people.schedule(svc, ANA, place, task="Sum up", when="every day at 9:00")
        assert said == Refused(people.IN_A_CHANNEL), place
        assert said.reason == "Schedules post in a channel; ask in the channel you want them in."
        assert people.direct(place)
    assert (await people.listed(svc, None)).schedules == ()
    web = Place(platform="web", workspace="web", channel="chat")
    console = Place(platform="console", workspace="console", channel="console")
    group = Place(platform="discord", workspace="99", channel="1234567890")
    for place in (OPS, web, console, group):
        assert not people.direct(place)
        made = await people.schedule(svc, ANA, place, task="Sum up", when="every day at 9:00")
        assert isinstance(made, Scheduled), place
