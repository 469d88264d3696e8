"""A form an MCP server asks for, in the console (bots/console/forms.py): its fields asked
one line at a time (choices by number), a refused answer said and asked again, the
answer reaching the tests' own MCP server over stdio, and ``d`` declining."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from rich.console import Console

from bots.console.lines import Lines
from bots.console.session import RunConsole
from bots.console.thread import ConsoleThread
from core.runs import control
from core.tools import elicit as elicit_module
from core.types import AgentSpec
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.integration.forms_run import BOOKED, TOO_MANY_SAID, TOOL, booker, shop_tools, with_shop

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


async def until(out: io.StringIO, text: str, after: int = 0) -> None:
    for _ in range(1000):
        if text in out.getvalue()[after:]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{text!r} never printed:\n{out.getvalue()}")


async def console_run(make_services: Any, lines: list[list[str]]) -> tuple[Any, str]:
    """A run whose agent books through the shop, followed in a console; each group of
    ``lines`` typed once the console asks for the form's first field again."""
    svc = make_services(with_shop(make_settings()), booker())
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    typed = Lines()
    person = Person("console", "Ana")
    session = RunConsole(svc, console, ConsoleThread(console), typed, person=person)
    async with shop_tools(svc):
        spec = AgentSpec(name="Booker", role="orchestrator", tools=(TOOL, "finish"))
        run_id = await control.propose_run(svc, "book", spec, requested_by="console")
        assert (await control.approve_run(svc, run_id, "console")).ok
        following = asyncio.create_task(session.follow(run_id))
        seen = 0
        for group in lines:
            await until(out, "↳ Your name", seen)
            seen = len(out.getvalue())
            for line in group:
                typed.put(line)
        final = await asyncio.wait_for(following, 30)
    return final, out.getvalue()


async def test_the_form_is_asked_field_by_field(make_services) -> None:
    final, printed = await console_run(
        make_services, [["Ada", "20", "2", "y", ""], ["Ada", "4", "2", "y", ""]]
    )
    assert "📝 shop asks: Who is the table for?" in printed
    assert "↳ Seating (required) 1: inside, 2: terrace" in printed
    assert TOO_MANY_SAID in printed
    assert "✓ Sent by Ana to shop." in printed
    assert final.status is RunStatus.COMPLETED and BOOKED in (final.result or "")


async def test_d_declines_the_form(make_services) -> None:
    final, printed = await console_run(make_services, [["d"]])
    assert "✓ Declined by Ana for shop." in printed
    assert "Not booked (decline)." in (final.result or "")


async def test_lines_typed_ahead_fill_the_form_in(make_services) -> None:
    """Piped input: lines typed before the server asks are its form's answers, in order."""
    svc = make_services(with_shop(make_settings()), booker())
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    typed = Lines()
    for line in ("Ada", "4", "2", "y", ""):
        typed.put(line)
    session = RunConsole(svc, console, ConsoleThread(console), typed, hold_empty=True)
    async with shop_tools(svc):
        spec = AgentSpec(name="Booker", role="orchestrator", tools=(TOOL, "finish"))
        run_id = await control.propose_run(svc, "book", spec, requested_by="console")
        assert (await control.approve_run(svc, run_id, "console")).ok
        final = await asyncio.wait_for(session.follow(run_id), 30)
    assert BOOKED in (final.result or ""), out.getvalue()
