"""A request over its channel's monthly budget, at the console (bots/console/spend.py):
the ask is shown in the thread; a line that is no answer offers the choices again; ``a``
approves (the run is planned and completes), ``d`` denies (the run ends saying who and
why); someone who is not the owner nor an admin is refused and the ask stays open."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from rich.console import Console

from bots.console.lines import Lines
from bots.console.session import RunConsole
from bots.console.thread import ConsoleThread
from core.config_governance import BudgetRule, GovernanceSettings
from core.runs import people
from core.runs.outcomes import Requested
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunStatus
from tests.planning_helpers import settings as planning_settings
from tests.scenarios.test_spend import direct_model

HERE = Place(platform="console", workspace="console", channel="console", channel_name="console")


async def follow(
    make_services: Any, typed: list[str | None], person: Person, then: str = ""
) -> tuple[Any, str]:
    """``person`` asks; ``typed`` lines are put at once, ``then`` once a refusal shows."""
    rule = BudgetRule(month_usd=0.0, owner="console", owner_name="Ana", name="the console")
    base = planning_settings(library_top_k=0)
    gov = GovernanceSettings(channels={HERE.key: rule})
    svc = make_services(base.model_copy(update={"governance": gov}), direct_model())
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    lines = Lines()
    session = RunConsole(svc, console, ConsoleThread(console), lines, person=person)
    made = await people.request(svc, "What is the capital of France?", person, place=HERE)
    assert isinstance(made, Requested)
    for line in typed:
        lines.put(line)

    async def after_refusal() -> None:
        for _ in range(500):
            if "Only " in out.getvalue():
                break
            await asyncio.sleep(0.02)
        lines.put(then)

    later = asyncio.create_task(after_refusal()) if then else None
    final = await asyncio.wait_for(session.follow(made.run_id), 15)
    if later is not None:
        await later
    return final, out.getvalue()


async def test_the_owner_approves_and_the_run_completes(make_services) -> None:
    ana = Person(id="console", name="Ana")
    final, printed = await follow(make_services, ["maybe", "a"], ana)
    assert "would take the console over its channel budget" in printed
    assert printed.count("a: approve spending over the budget, d: deny") == 2
    assert "✔ Spending over the budget approved by Ana." in printed
    assert final.status is RunStatus.COMPLETED


async def test_the_owner_denies_and_the_run_ends_saying_why(make_services) -> None:
    ana = Person(id="console", name="Ana")
    final, printed = await follow(make_services, ["d"], ana)
    assert "✖ Spending over the budget denied by Ana." in printed
    assert final.status is RunStatus.FAILED
    assert "Ana did not approve going over the console's budget" in (final.error or "")


async def test_someone_else_is_refused_and_may_only_cancel(make_services) -> None:
    bob = Person(id="bob", name="Bob")
    final, printed = await follow(make_services, ["a"], bob, then="c")
    assert "Only Ana or an admin may decide about the console's budget." in printed
    assert final.status is RunStatus.CANCELLED


async def test_with_no_input_left_the_spending_is_not_approved(make_services) -> None:
    ana = Person(id="console", name="Ana")
    final, printed = await follow(make_services, [None], ana)
    assert "no more input: not approving spending over the budget" in printed
    assert final.status is RunStatus.FAILED


async def test_with_no_input_left_someone_elses_request_is_cancelled(make_services) -> None:
    final, printed = await follow(make_services, [None], Person(id="bob", name="Bob"))
    assert "Only Ana or an admin may decide" in printed
    assert final.status is RunStatus.CANCELLED
