"""A risky tool call waits for a person (``[tools.approval]``), with either scheduler:
denied once (the agent reads who denied it and why as the call's result), approved once
(the call runs once, then), the run completes; an outsider's click is refused; two
clicks make one decision; nobody deciding in time is read as such."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.agent import approvals
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people
from core.runs.control import start_run
from core.runs.outcomes import ActionDecided, Refused
from core.services import Services
from core.state import approvals as book
from core.types import AgentSpec
from core.types.events import ApprovalAsked, ApprovalDecided, RunFinished
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect
from tests.schedulers import SCHEDULERS

ALICE = Person("U0ALICE", "Alice")  # asked for the run
MALLORY = Person("U0MALLORY", "Mallory")  # nobody named her an approver
SECRET = "sk-abcdefghijklmnop"
WRITE = {"path": "outputs/report.md", "content": f"v1 key {SECRET}"}


def approval_settings(**approval: Any) -> Any:
    return make_settings(tools={"approval": {"tools": ["write_file"], **approval}})


async def waiting(svc: Services, run_id: str, count: int = 1, timeout_s: float = 20) -> Any:
    """The run's open request once ``count`` requests were made (the newest)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = await approvals.pending(svc, run_id)
        run = await svc.store.get_run(run_id)
        if found and len(await book.every(svc.store, run_id)) >= count:
            if run.status is RunStatus.WAITING_HUMAN:
                return found[-1]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no call waits for approval in {run_id}")


def agent() -> AgentSpec:
    return AgentSpec(name="Writer", tools=("write_file", "finish"))


@SCHEDULERS
async def test_denied_once_then_approved_once_and_the_run_completes(services: Any) -> None:
    model = ScriptedModel().script(
        "*",
        Reply(content="I save the report.", calls=(call("write_file", WRITE),)),
        Reply(content="Trying again.", calls=(call("write_file", WRITE),)),
        Reply(calls=(call("finish", {"result": "saved"}),)),
    )
    svc = await services(approval_settings(), model)
    run_id = await start_run(svc, "write the report", agent(), requested_by=ALICE.id)

    asked = await waiting(svc, run_id)
    assert asked.tool == "write_file" and asked.reason == "I save the report."
    assert SECRET not in asked.arguments and "••••" in asked.arguments
    assert await svc.workspace.info(run_id, "outputs/report.md") is None
    assert len(model.requests) == 1  # waiting: no model call, no worker held

    outsider = await people.approve_action(svc, run_id, asked.id, MALLORY, "once")
    assert isinstance(outsider, Refused) and "Only" in outsider.reason
    denied = await people.approve_action(
        svc, run_id, asked.id, ALICE, "deny", reason="not in outputs/ please"
    )
    assert isinstance(denied, ActionDecided)
    assert denied.line == "Denied by Alice: not in outputs/ please"
    again = await people.approve_action(svc, run_id, asked.id, ALICE, "once")
    assert isinstance(again, Refused) and "already decided" in again.reason

    second = await waiting(svc, run_id, count=2)
    assert second.id != asked.id
    read = model.requests[1].messages
    result = next(m for m in reversed(read) if m.role == "tool")
    assert result.content is not None
    assert result.content.startswith("Denied by Alice: not in outputs/ please")
    assert await svc.workspace.info(run_id, "outputs/report.md") is None

    approved = await people.approve_action(svc, run_id, second.id, ALICE, "once")
    assert isinstance(approved, ActionDecided) and approved.line == "Approved once by Alice."
    events = await collect(svc, run_id, timeout_s=20)
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.COMPLETED
    assert await svc.workspace.read(run_id, "outputs/report.md") == f"v1 key {SECRET}".encode()
    last = next(m for m in reversed(model.requests[2].messages) if m.role == "tool")
    assert last.content is not None and "report.md" in last.content
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [(d.decision.choice, d.decision.name) for d in decided] == [
        ("deny", "Alice"),
        ("once", "Alice"),
    ]
    assert sum(isinstance(e, ApprovalAsked) for e in events) == 2
