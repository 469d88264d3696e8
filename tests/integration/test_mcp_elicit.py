"""MCP elicitation end to end, against the tests' own SDK server
(tests/fakes/mcp_elicit_server.py) over stdio: a tool call asks for a form, the run's
thread gets it (FormAsked), a person answers through the people room, and the server
reads the answer — accept with content, decline, URL mode, an outsider refused, the
time-out."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.agent.context import ToolContext
from core.runs import control, people
from core.runs.outcomes import Done, FormInvalid, Refused
from core.services import Services
from core.tools import elicit as elicit_module
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import ToolCall
from core.types.events import FormAsked, FormClosed
from core.types.forms import Typed
from core.types.people import Person
from tests.conftest import make_settings
from tests.integration.test_mcp import mcp_services

pytestmark = pytest.mark.integration
__all__ = ["mcp_services"]  # the fixture, used by name

SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_elicit_server.py")
ALICE = Person("U0ALICE", "Alice")
MALLORY = Person("U0MAL", "Mallory")


def settings(timeout_s: float = 30.0) -> Any:
    stdio = {"transport": "stdio", "command": sys.executable, "args": [SERVER]}
    mcp = {"connect_timeout_s": 10.0, "call_timeout_s": 5.0, "servers": {"shop": stdio}}
    return make_settings(mcp={**mcp, "elicitation_timeout_s": timeout_s})


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


async def call(svc: Services, name: str) -> tuple[asyncio.Task[Any], FormAsked]:
    """Start tool ``name`` in a run Alice asked for; wait for its form."""
    spec = AgentSpec(name="Booker", role="solo", tools=(name,))
    run_id = await control.propose_run(svc, "book a table", spec, requested_by=ALICE.id)
    ctx = ToolContext(svc, AgentState(spec=spec, run_id=run_id))
    tc = ToolCall(id="c1", name=name, arguments=json.dumps({}))
    task = asyncio.create_task(svc.tools.execute(ctx, tc, [name], svc.prompts, max_chars=4000))
    for _ in range(400):
        asked = [e for _, e in await svc.store.read_events(run_id) if isinstance(e, FormAsked)]
        if asked:
            return task, asked[0]
        assert not task.done(), task.result()
        await asyncio.sleep(0.025)
    raise AssertionError("no form was asked for")


async def test_a_form_filled_in_reaches_the_server(mcp_services: Any) -> None:
    svc = await mcp_services(settings())
    task, asked = await call(svc, "shop__book_table")
    fields = {f.name: f for f in asked.fields}
    assert asked.server == "shop" and asked.message == "Who is the table for?"
    assert (fields["guests"].kind, fields["guests"].minimum, fields["guests"].maximum) == (
        "integer", 1, 12,
    )  # fmt: skip
    assert [o.value for o in fields["seating"].options] == ["inside", "terrace"]
    assert fields["vegan"].kind == "boolean" and fields["name"].required

    refused = await people.answer_form(svc, asked.run_id, asked.form_id, MALLORY, "accept", {})
    assert isinstance(refused, Refused) and "answer this form" in refused.reason
    typed: dict[str, Typed] = {"name": "Ada", "guests": "20", "seating": "terrace", "vegan": True}
    wrong = await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept", typed)
    assert isinstance(wrong, FormInvalid) and wrong.lines == ("Guests must be at most 12.",)
    typed["guests"] = "4"
    done = await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept", typed)
    assert isinstance(done, Done) and done.line == "Sent by Alice to shop."
    result = await asyncio.wait_for(task, 10)
    assert (result.ok, result.content) == (
        True, "Booked 4 on the terrace for Ada (vegan menu, no email).",
    )  # fmt: skip


async def test_declined_and_confirmed_forms(mcp_services: Any) -> None:
    svc = await mcp_services(settings())
    task, asked = await call(svc, "shop__book_table")
    await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "decline")
    assert (await asyncio.wait_for(task, 10)).content == "Not booked (decline)."
    task, asked = await call(svc, "shop__confirm")
    assert asked.fields == () and asked.url is None
    await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept")
    assert (await asyncio.wait_for(task, 10)).content == "Confirmation: accept."


async def test_a_link_to_open(mcp_services: Any) -> None:
    svc = await mcp_services(settings())
    task, asked = await call(svc, "shop__sign_in")
    assert asked.url == "https://booking.example/sign-in?state=42" and asked.fields == ()
    done = await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept")
    assert isinstance(done, Done)
    assert (await asyncio.wait_for(task, 10)).content == "Sign-in: accept."


async def test_nobody_answers_in_time(mcp_services: Any) -> None:
    svc = await mcp_services(settings(timeout_s=0.5))
    task, asked = await call(svc, "shop__book_table")
    assert (await asyncio.wait_for(task, 10)).content == "Not booked (cancel)."
    closed = [e for _, e in await svc.store.read_events(asked.run_id) if isinstance(e, FormClosed)]
    assert [(c.action, c.timed_out) for c in closed] == [("cancel", True)]
