"""The offline demo under a `[tools.approval]` policy that makes the lead's write wait: the
demo decides it through the people room (at a terminal the person does; otherwise it is
approved once), and a denied write still ends the run with a result that says why."""

from __future__ import annotations

from core.process.demo_flow import run_demo
from core.runs.approval import Approve, Decision, ProposalView
from core.types.approvals import Choice
from core.types.events import ApprovalAsked, ApprovalDecided, RunEvent
from core.types.run import RunStatus
from tests.conftest import make_settings


async def _run(choice: Choice, reason: str = "") -> tuple[str, list[RunEvent]]:
    events: list[RunEvent] = []

    async def ask(_: ProposalView) -> Decision:
        return Approve()

    async def decide(event: ApprovalAsked) -> tuple[Choice, str]:
        assert event.request.tool == "write_file"
        return choice, reason

    settings = make_settings(tools={"approval": {"tools": ["write_file"]}})
    run = await run_demo(
        settings, ask, on_event=events.append, on_message=lambda _: None, decide_action=decide
    )
    assert run.status is RunStatus.COMPLETED
    return run.result or "", events


async def test_an_approved_write_runs_once_and_the_budget_is_checked() -> None:
    result, events = await _run("once")
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [d.decision.choice for d in decided] == ["once"]
    assert "the parts add up to the total" in result


async def test_a_denied_write_ends_the_run_saying_the_file_could_not_be_checked() -> None:
    result, events = await _run("deny", "not today")
    assert any(isinstance(e, ApprovalDecided) for e in events)
    assert "budget.md could not be checked" in result
