"""Team spend (``core.runs.spend``, ``core.spend``): a channel over its monthly budget asks
its owner before planning — approve → the run is planned and runs, deny → it ends with
the reason, a stranger's click is refused, a second click is told; the ledger counts
each ended run once and its report sums to the runs' costs; the 80 % warning is said
once; budgets are set by admins only. Inline (fakeredis, real Redis) and on a real
Celery worker."""

from __future__ import annotations

import asyncio
from typing import Any

from core.config import Settings
from core.config_governance import BudgetRule, GovernanceSettings
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people, requests
from core.runs import spend as spending
from core.runs.outcomes import Done, Refused, Requested
from core.services import Services
from core.spend import ledger
from core.state import spend as kept
from core.types.events import (
    RunEvent,
    RunFinished,
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
)
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunStatus
from tests.helpers import collect
from tests.planning_helpers import settings as planning_settings
from tests.schedulers import SCHEDULERS

OPS = Place(
    platform="slack",
    workspace="T0ACME",
    channel="C0OPS",
    workspace_name="Acme",
    channel_name="#ops",
)
ANA = Person(id="U0ANA", name="Ana")
BOB = Person(id="U0BOB", name="Bob")
CALL_USD = 0.01


def governed(month_usd: float, **more: Any) -> Settings:
    base = planning_settings(library_top_k=0)
    rule = BudgetRule(month_usd=month_usd, owner=ANA.id, owner_name="Ana", name="#ops")
    gov = GovernanceSettings(channels={OPS.key: rule}, fold_every_s=0.01, **more)
    return base.model_copy(update={"governance": gov})


def direct_model() -> ScriptedModel:
    """Every request answered directly: a router call, then the UI agent's turns."""
    m = ScriptedModel(cost_per_call_usd=CALL_USD)
    direct = {"path": "direct", "reason": "a fact", "answer": "Paris."}
    return m.script("router", *[Reply(calls=(call("submit_router", direct),))] * 6)


async def ask(svc: Services, who: Person = BOB, place: Place = OPS) -> str:
    made = await people.request(svc, "What is the capital of France?", who, place=place)
    assert isinstance(made, Requested)
    return made.run_id


async def events_until(
    svc: Services, run_id: str, kind: type, timeout_s: float = 20
) -> list[RunEvent]:
    for _ in range(int(timeout_s / 0.05)):
        events = [e for _, e in await svc.store.read_events(run_id)]
        if any(isinstance(e, kind) for e in events):
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind.__name__} on {run_id}")


async def runs_cost(svc: Services, run_ids: list[str]) -> float:
    """The runs' costs as the run records and usage counters hold them."""
    total = 0.0
    for run_id in run_ids:
        run = await svc.store.get_run(run_id)
        total += (await svc.store.run_usage(run_id)).cost_usd
        total += run.planning.cost_usd if run.planning else 0.0
    return total


@SCHEDULERS
async def test_over_budget_asks_the_owner_and_approval_lets_the_run_proceed(
    services, kind, monkeypatch
) -> None:
    svc = await services(governed(month_usd=0.015), direct_model())
    first = await ask(svc)
    ended = await collect(svc, first, timeout_s=20)
    assert ended[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]
    spent = await runs_cost(svc, [first])
    assert spent >= 0.015  # the month is now over its budget

    second = await ask(svc)
    events = await events_until(svc, second, SpendApprovalAsked)
    asked = next(e for e in events if isinstance(e, SpendApprovalAsked))
    assert (asked.owner_id, asked.owner_name, asked.place_name) == (ANA.id, "Ana", "#ops")
    assert asked.spent_usd == spent and asked.month_usd == 0.015
    assert "Ana" in spending.asked_text(asked) and "U0ANA" not in spending.asked_text(asked)
    await asyncio.sleep(0.3)  # nothing plans it meanwhile
    assert (await svc.store.get_run(second)).status is RunStatus.PLANNING
    # Long after planning would have timed out, the waiting request is not given up.
    monkeypatch.setattr(requests, "stuck_after", lambda svc, run: 0.0)
    assert await requests.give_up_if_stuck(svc, second) is False
    monkeypatch.undo()

    refused = await spending.approve_spend(svc, second, BOB, approve=True)
    assert isinstance(refused, Refused) and "Ana" in refused.reason
    approved = await spending.approve_spend(svc, second, ANA, approve=True)
    assert isinstance(approved, Done) and approved.said.line.endswith("by Ana.")
    again = await spending.approve_spend(svc, second, ANA, approve=False)
    assert isinstance(again, Refused)

    done = await collect(svc, second, timeout_s=20)
    assert done[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]
    decided = [e for e in done if isinstance(e, SpendApprovalDecided)]
    assert [(d.approved, d.by_name) for d in decided] == [(True, "Ana")]

    # Both ended runs folded once (a worker's background loop may have folded some
    # already; a second pass counts nothing twice).
    await ledger.fold_ended(svc)
    assert await kept.open_runs(svc.store) == {}
    assert await ledger.fold_ended(svc) == 0
    for run_id in (first, second):
        assert await ledger.fold_run(svc, await svc.store.get_run(run_id)) is False
    report = await spending.report(svc, channel_key=OPS.key)
    expected = await runs_cost(svc, [first, second])
    assert abs(report.total_usd - expected) < 1e-9
    assert {r.run_id for r in report.rows} == {first, second}
    assert [(t.name, round(t.cost_usd, 9)) for t in report.by_person] == [
        ("Bob", round(expected, 9))
    ]
    assert [t.name for t in report.by_channel] == ["#ops"]
    assert {t.key for t in report.by_model} >= {ledger.PLANNING}
    (use,) = report.budgets
    assert use.budget.owner_name == "Ana" and abs(use.spent_usd - expected) < 1e-9


@SCHEDULERS
async def test_a_denied_request_ends_with_the_reason(services, kind) -> None:
    svc = await services(governed(month_usd=0.0), direct_model())
    run_id = await ask(svc)
    await events_until(svc, run_id, SpendApprovalAsked)
    denied = await spending.approve_spend(svc, run_id, ANA, approve=False)
    assert isinstance(denied, Done)
    events = await collect(svc, run_id, timeout_s=10)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is RunStatus.FAILED
    assert finished.error is not None and "Ana did not approve" in finished.error
    assert "#ops" in finished.error
    assert (await svc.store.agent_ids(run_id)) == []  # never planned, nothing ran


@SCHEDULERS
async def test_the_warning_is_said_once_at_its_line(services, kind) -> None:
    # The line at 30 % (80 % by default), so the month is past it after one run and
    # still under the budget after two.
    svc = await services(governed(month_usd=1.0, warn_at=0.3), direct_model())
    first = await ask(svc)
    await collect(svc, first, timeout_s=20)
    spent = await runs_cost(svc, [first])
    # A budget the month is now at a third of, set by an admin.
    admin = Person(id="U0ADM", name="Ada", approver=True)
    made = await spending.set_budget(svc, admin, OPS, month_usd=spent * 3, owner=ANA)
    assert isinstance(made, spending.BudgetSet) and "Ana approves" in made.line
    second = await ask(svc)
    events = await collect(svc, second, timeout_s=20)
    warned = [e for e in events if isinstance(e, SpendWarned)]
    assert len(warned) == 1 and warned[0].place_name == "#ops"
    assert "33%" in spending.warned_text(warned[0])
    third = await ask(svc)
    events = await collect(svc, third, timeout_s=20)
    assert not any(isinstance(e, SpendWarned) for e in events)


async def test_only_admins_set_budgets_and_bad_amounts_are_refused(make_services) -> None:
    svc = make_services(governed(month_usd=5.0, admins=("U0ADM",)), direct_model())
    refused = await spending.set_budget(svc, BOB, OPS, month_usd=10.0)
    assert isinstance(refused, Refused) and "admins" in refused.reason
    admin = Person(id="U0ADM", name="Ada")
    for bad in (-1.0, 1e12):
        assert isinstance(await spending.set_budget(svc, admin, OPS, month_usd=bad), Refused)
    made = await spending.set_budget(svc, admin, OPS, month_usd=10.0, scope="workspace")
    assert isinstance(made, spending.BudgetSet) and made.budget.place_key == "slack:T0ACME"
    report = await spending.report(svc)
    keys = {(u.budget.place_key, u.budget.month_usd) for u in report.budgets}
    assert keys == {(OPS.key, 5.0), ("slack:T0ACME", 10.0)}
    for bad_month in ("2026-13", "last month", "2026-1"):
        try:
            await spending.report(svc, month=bad_month)
        except ValueError as exc:
            assert "2026-11" in str(exc)
        else:
            raise AssertionError(f"{bad_month!r} accepted")


async def test_a_run_is_folded_once_with_its_image_calls(make_services, any_redis) -> None:
    """Five processes folding the same ended run count it once; its image calls are
    counted under the image model; an ended run without a place counts as unplaced."""
    svc = make_services(governed(month_usd=5.0), direct_model(), redis=any_redis)
    run_id = await ask(svc)
    await collect(svc, run_id, timeout_s=20)
    await kept.add_image_cost(svc.store, run_id, "openai/gpt-image-1", 0.04)
    await kept.add_image_cost(svc.store, run_id, "openai/gpt-image-1", 0.0)  # nothing
    run = await svc.store.get_run(run_id)
    folded = await asyncio.gather(*(ledger.fold_run(svc, run) for _ in range(5)))
    assert folded.count(True) == 1
    made = await spending.report(svc)
    models = {t.key: t.cost_usd for t in made.by_model}
    assert abs(models.pop("openai/gpt-image-1") - 0.04) < 1e-9
    assert abs(made.total_usd - (await runs_cost(svc, [run_id]) + 0.04)) < 1e-9
    assert sum(models.values()) > 0 and made.under_way_usd == 0

    unplaced = await people.request(svc, "What is the capital of France?", BOB)
    assert isinstance(unplaced, Requested)
    await collect(svc, unplaced.run_id, timeout_s=20)
    await ledger.fold_ended(svc)
    made = await spending.report(svc)
    assert {t.key for t in made.by_channel} == {OPS.key, "unplaced"}


async def test_planning_delivered_again_while_asked_does_not_ask_twice(make_services) -> None:
    svc = make_services(governed(month_usd=0.0), direct_model())
    run_id = await ask(svc)
    await events_until(svc, run_id, SpendApprovalAsked)
    for _ in range(3):  # the watchdog's re-submissions, a broker's redelivery
        await requests.plan_request(svc, run_id)
    events = [e for _, e in await svc.store.read_events(run_id)]
    assert sum(isinstance(e, SpendApprovalAsked) for e in events) == 1
    assert (await svc.store.get_run(run_id)).status is RunStatus.PLANNING
    assert isinstance(await spending.approve_spend(svc, run_id, ANA, approve=True), Done)
    done = await collect(svc, run_id, timeout_s=20)
    assert done[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]


async def test_a_workspace_over_its_budget_asks_its_owner(make_services) -> None:
    """No channel budget, the workspace's spent: its owner is asked; an admin may decide
    too; a report for the workspace lists its budget and no other workspace's."""
    base = planning_settings(library_top_k=0)
    rule = BudgetRule(month_usd=0.0, owner="U0ZOE", owner_name="Zoe", name="Acme")
    other = BudgetRule(month_usd=9.0, owner="U0ZOE", owner_name="Zoe", name="Acme 10")
    gov = GovernanceSettings(
        workspaces={OPS.team_key: rule, "slack:T0ACME0": other}, admins=("U0ADM",)
    )
    svc = make_services(base.model_copy(update={"governance": gov}), direct_model())
    run_id = await ask(svc)
    events = await events_until(svc, run_id, SpendApprovalAsked)
    asked = next(e for e in events if isinstance(e, SpendApprovalAsked))
    assert (asked.scope, asked.place_name, asked.owner_name) == ("workspace", "Acme", "Zoe")
    assert "workspace budget" in spending.asked_text(asked)
    admin = Person(id="U0ADM", name="Ada")
    assert isinstance(await spending.approve_spend(svc, run_id, admin, approve=True), Done)
    done = await collect(svc, run_id, timeout_s=20)
    assert done[-1].status is RunStatus.COMPLETED  # type: ignore[union-attr]
    made = await spending.report(svc, team_key=OPS.team_key)
    assert [u.budget.place_key for u in made.budgets] == [OPS.team_key]


async def test_a_run_started_without_a_request_is_counted_too(make_services) -> None:
    """A run proposed and started directly (the console's ``caramba run``, a schedule's
    firing) is in the ledger once it ends: under its place, or as unplaced."""
    from core.runs.control import start_run
    from core.types import AgentSpec

    svc = make_services(governed(month_usd=5.0), direct_model())
    spec = AgentSpec(name="Solo", role="orchestrator", tools=("finish",))
    run_id = await start_run(svc, "say hi", spec, requested_by=BOB.id)
    await collect(svc, run_id, timeout_s=20)
    await ledger.fold_ended(svc)
    made = await spending.report(svc)
    assert [r.run_id for r in made.rows] == [run_id] and made.rows[0].channel_key == "unplaced"
    assert abs(made.total_usd - await runs_cost(svc, [run_id])) < 1e-9


async def test_what_only_an_open_run_needs_is_dropped_when_it_is_folded(make_services) -> None:
    """A request cancelled while it waits for a spending decision leaves no ask behind
    once folded (nor its planning note, nor its image costs); a forgotten open run is
    dropped the same way; the names hash lives as long as the months that show it."""
    from core.runs.control import cancel_run

    svc = make_services(governed(month_usd=0.0), direct_model())
    run_id = await ask(svc)
    await events_until(svc, run_id, SpendApprovalAsked)
    await kept.note_planning(svc.store, run_id, 0.002)
    await kept.add_image_cost(svc.store, run_id, "openai/gpt-image-1", 0.04)
    images = svc.store.keys.spend_images(run_id)
    assert 0 < await svc.store.redis.ttl(images) <= 86_400 * 31
    assert await spending.waiting(svc, run_id) is not None
    assert (await cancel_run(svc, run_id, ANA.id, name="Ana")).ok
    assert await ledger.fold_ended(svc) == 1
    keys = svc.store.keys
    for hash_key in (keys.spend_asks(), keys.spend_planned(), keys.spend_open()):
        assert await svc.store.redis.hget(hash_key, run_id) is None
    assert await svc.store.redis.exists(images) == 0
    assert await spending.waiting(svc, run_id) is None
    made = await spending.report(svc)
    assert [r.run_id for r in made.rows] == [run_id]  # its image call still counted
    assert {t.key for t in made.by_model} >= {"openai/gpt-image-1"}
    # The names hash: refreshed by every fold and every name learned.
    ttl = await svc.store.redis.ttl(keys.spend_names())
    assert ledger.ttl_s(svc) - 5 <= ttl <= ledger.ttl_s(svc)
    await svc.store.redis.expire(keys.spend_names(), 60)
    await spending.name_place(svc, OPS)
    assert await svc.store.redis.ttl(keys.spend_names()) > 60

    # An open run whose record is gone: dropped with what it left.
    await kept.open_run(svc.store, "run_gone", OPS.key, OPS.team_key)
    await kept.put_ask(svc.store, "run_gone", "{}")
    await kept.note_planning(svc.store, "run_gone", 0.5)
    await kept.add_image_cost(svc.store, "run_gone", "openai/gpt-image-1", 0.1)
    await ledger.fold_ended(svc)
    assert await kept.open_runs(svc.store) == {}
    assert await kept.get_ask(svc.store, "run_gone") is None
    assert await kept.live_costs(svc.store, ["run_gone"]) == {"run_gone": 0.0}


async def test_a_click_on_an_ask_whose_run_was_cancelled_says_it_ended(make_services) -> None:
    """Cancelled while it waited: Approve is refused as an ended ask (no pass granted,
    nothing planned), before and after the fold; a decided ask stays "decided"."""
    from core.runs.control import cancel_run

    svc = make_services(governed(month_usd=0.0), direct_model())
    run_id = await ask(svc)
    await events_until(svc, run_id, SpendApprovalAsked)
    assert (await cancel_run(svc, run_id, BOB.id, name="Bob")).ok
    for fold in (False, True):
        if fold:
            await ledger.fold_ended(svc)
        ended = await spending.approve_spend(svc, run_id, ANA, approve=True)
        assert isinstance(ended, spending.AskEnded)
        assert "ended before anybody decided" in ended.reason and "by Bob" in ended.reason
    assert await kept.passed_at(svc.store, run_id) is None
    assert (await svc.store.get_run(run_id)).status is RunStatus.CANCELLED
    assert await svc.store.agent_ids(run_id) == []

    denied = await ask(svc)
    await events_until(svc, denied, SpendApprovalAsked)
    assert isinstance(await spending.approve_spend(svc, denied, ANA, approve=False), Done)
    again = await spending.approve_spend(svc, denied, ANA, approve=True)
    assert isinstance(again, Refused) and not isinstance(again, spending.AskEnded)
    forged = await spending.approve_spend(svc, "run_nope", ANA, approve=True)
    assert isinstance(forged, Refused) and not isinstance(forged, spending.AskEnded)


@SCHEDULERS
async def test_the_warning_is_said_when_an_ended_run_takes_the_month_past_its_line(
    services, kind, monkeypatch
) -> None:
    """No request crosses the line, a run's cost does: the run that took the month past
    ``warn_at`` carries the warning (once: its fold and its relay share one claim); the
    next request is not warned again."""
    svc = await services(governed(month_usd=1.0, warn_at=0.6), direct_model())
    first = await ask(svc)
    await collect(svc, first, timeout_s=20)
    spent = await runs_cost(svc, [first])
    admin = Person(id="U0ADM", name="Ada", approver=True)
    made = await spending.set_budget(svc, admin, OPS, month_usd=spent * 2.1, owner=ANA)
    assert isinstance(made, spending.BudgetSet)
    second = await ask(svc)
    events = await collect(svc, second, timeout_s=20)
    assert not any(isinstance(e, SpendWarned) for e in events)  # at 48 % when asked
    # A pass now, whenever this process last folded (forgotten after the test).
    monkeypatch.setattr(spending, "_folded_at", {})
    await spending.fold_ended(svc)
    warned = [e for e in await events_until(svc, second, SpendWarned) if isinstance(e, SpendWarned)]
    assert len(warned) == 1 and warned[0].place_name == "#ops"
    assert "95%" in spending.warned_text(warned[0])
    # Its relay asking at its end gets it too (the claim is its own), emitted once.
    again = await spending.warn_after(svc, await svc.store.get_run(second))
    assert [e.place_name for e in again] == ["#ops"]
    events = [e for _, e in await svc.store.read_events(second)]
    assert sum(isinstance(e, SpendWarned) for e in events) == 1
    # Another run's end or request is not warned again this month.
    assert await spending.warn_after(svc, await svc.store.get_run(first)) == []
    third = await ask(svc)
    events = await collect(svc, third, timeout_s=20)
    assert not any(isinstance(e, SpendWarned) for e in events)
