"""A tool call waiting for approval, at the console (bots/console/session.py): ``d
<why>`` denies it (the agent reads why), ``o`` approves it once, and the run completes;
with no input left a waiting call is denied, saying so — driven by typed lines."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from rich.console import Console

from bots.console.lines import Lines
from bots.console.session import RunConsole
from bots.console.thread import ConsoleThread
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import control
from core.types import AgentSpec
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import make_settings

WRITE = call("write_file", {"path": "notes.md", "content": "hello"})


def _last_result(r: LLMRequest) -> str:
    results = [m.content or "" for m in r.messages if m.role == "tool"]
    return results[-1] if results else ""


def writer(r: LLMRequest) -> Reply:
    """Writes notes.md until a write of it ran (denied: it tries again), then finishes."""
    last = _last_result(r)
    if last and not last.startswith("Denied"):
        return Reply(calls=(call("finish", {"result": "notes written"}),))
    return Reply(content="I keep notes.", calls=(WRITE,))


def gives_up(r: LLMRequest) -> Reply:
    """Writes notes.md once; denied, it finishes without."""
    if _last_result(r).startswith("Denied"):
        return Reply(calls=(call("finish", {"result": "could not write"}),))
    return Reply(content="I keep notes.", calls=(WRITE,))


async def follow(
    make_services: Any, typed: list[str | None], brain: Any = writer
) -> tuple[Any, str, ScriptedModel]:
    model = ScriptedModel(responder=brain)
    svc = make_services(make_settings(tools={"approval": {"tools": ["write_file"]}}), model)
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    lines = Lines()
    person = Person(id="console", name="Ana")
    session = RunConsole(svc, console, ConsoleThread(console), lines, person=person)
    spec = AgentSpec(name="Writer", role="orchestrator", tools=("write_file", "finish"))
    run_id = await control.propose_run(svc, "keep notes", spec, requested_by="console")
    assert (await control.approve_run(svc, run_id, "console")).ok
    for line in typed:
        lines.put(line)
    final = await asyncio.wait_for(session.follow(run_id), 10)
    return final, out.getvalue(), model


async def test_denied_with_a_reason_then_approved_once(make_services) -> None:
    final, printed, model = await follow(make_services, ["d not there", "o"])
    assert final.status is RunStatus.COMPLETED and final.result == "notes written"
    assert "🔐 Writer wants to use write_file" in printed and "Why: I keep notes." in printed
    assert "o: approve once, r: approve for this run, d <why>: deny" in printed
    assert "✖ Denied by Ana: not there" in printed and "✔ Approved once by Ana." in printed
    read = [m.content for r in model.requests for m in r.messages if m.role == "tool"]
    assert any((c or "").startswith("Denied by Ana: not there.") for c in read)


async def test_with_no_input_left_a_waiting_call_is_denied(make_services) -> None:
    final, printed, _ = await follow(make_services, [None], gives_up)  # input ends at once
    assert "no more input: denying the tool call" in printed
    assert "✖ Denied by Ana: nobody at the console could approve it" in printed
    assert final.status is RunStatus.COMPLETED and final.result == "could not write"
