"""The reference server's elicitation (``@modelcontextprotocol/server-everything``
2026.8.31 from npm, nobody on the team wrote it: tests/fakes/mcp_everything.py) as a real
form: ``trigger-elicitation-request`` asks for a form whose schema has every field kind the
spec allows; the run's thread gets it (FormAsked, its fields read from that schema), the
requester answers through the people room — a problem said in plain words first — and the
server echoes what it received. URL mode: ``trigger-url-elicitation`` through Done."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core.agent.context import ToolContext
from core.runs import control, people
from core.runs.outcomes import Done, FormInvalid
from core.services import Services
from core.tools import elicit as elicit_module
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import ToolCall
from core.types.events import FormAsked
from core.types.forms import Typed
from core.types.people import Person
from tests.fakes.mcp_everything import everything_command
from tests.integration.test_mcp import mcp_services, mcp_settings
from tests.integration.test_mcp_client import until

pytestmark = pytest.mark.integration
__all__ = ["mcp_services"]  # the fixture, used by name
ALICE = Person("U0ALICE", "Alice")


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


@pytest.fixture(scope="module")
def everything() -> dict[str, Any]:
    try:
        command, *args = everything_command()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return {"transport": "stdio", "command": command, "args": args}


async def call(svc: Services, name: str, **args: Any) -> tuple[asyncio.Task[Any], FormAsked]:
    """Start ``name`` in a run Alice asked for; wait for the form it asks for."""
    spec = AgentSpec(name="Tester", role="solo", tools=(name,))
    run_id = await control.propose_run(svc, "try it", spec, requested_by=ALICE.id)
    ctx = ToolContext(svc, AgentState(spec=spec, run_id=run_id))
    tc = ToolCall(id="c1", name=name, arguments=json.dumps(args))
    task = asyncio.create_task(svc.tools.execute(ctx, tc, [name], svc.prompts, max_chars=8000))
    for _ in range(400):
        asked = [e for _, e in await svc.store.read_events(run_id) if isinstance(e, FormAsked)]
        if asked:
            return task, asked[0]
        assert not task.done(), task.result()
        await asyncio.sleep(0.025)
    raise AssertionError("no form was asked for")


async def test_the_reference_servers_form_answered_in_the_thread(
    mcp_services: Any, everything: dict[str, Any]
) -> None:
    settings = mcp_settings(everything=everything)
    svc = await mcp_services(settings)
    tool = "everything__trigger-elicitation-request"
    await until(lambda: tool in svc.tools)
    task, asked = await call(svc, tool)
    fields = {f.name: f for f in asked.fields}
    kinds = {f.kind for f in asked.fields}
    assert {"text", "boolean", "choice", "choices"} <= kinds, fields
    required = [f for f in asked.fields if f.required]
    assert required, "the reference form requires something"

    missing = await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept", {})
    assert isinstance(missing, FormInvalid)
    assert all(line.endswith(" is required.") for line in missing.lines[: len(required)])

    typed: dict[str, Typed] = {}
    for f in asked.fields:
        if f.kind == "choice":
            typed[f.name] = f.options[0].value
        elif f.kind == "choices":
            typed[f.name] = [f.options[0].value]
        elif f.kind == "boolean":
            typed[f.name] = True
        elif f.kind in ("number", "integer"):
            typed[f.name] = str(int(f.minimum) if f.minimum is not None else 1)
        elif f.format == "email":
            typed[f.name] = "ada@example.com"
        elif f.format == "date":
            typed[f.name] = "2026-11-27"
        elif f.format == "date-time":
            typed[f.name] = "2026-11-27T12:00:00"
        elif f.format == "uri":
            typed[f.name] = "https://example.com"
        else:
            typed[f.name] = "Ada Lovelace"
    done = await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept", typed)
    assert isinstance(done, Done), done
    result = await asyncio.wait_for(task, 20)
    assert result.ok, result.content
    assert "accept" in result.content.lower() and "Ada Lovelace" in result.content, result.content
    assert fields  # every field the server asked for was rendered from its schema


async def test_the_reference_servers_link_through_done(
    mcp_services: Any, everything: dict[str, Any]
) -> None:
    svc = await mcp_services(mcp_settings(everything=everything))
    tool = "everything__trigger-url-elicitation"
    await until(lambda: tool in svc.tools)
    task, asked = await call(svc, tool, url="https://example.com/authorize")
    assert asked.url == "https://example.com/authorize" and asked.fields == ()
    assert isinstance(
        await people.answer_form(svc, asked.run_id, asked.form_id, ALICE, "accept"), Done
    )
    result = await asyncio.wait_for(task, 20)
    assert result.ok and "accept" in result.content.lower(), result.content
