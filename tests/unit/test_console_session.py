"""The console while a run works (bots/console/session.py): an agent's question answered,
cancel by ``c`` or Ctrl-C, a run paused at its budget extended or stopped — driven by
scripted lines, as a person would type them."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from typing import Any

import pytest
from rich.console import Console

from bots.console.lines import Lines
from bots.console.session import Interrupted, RunConsole
from bots.console.thread import ConsoleThread
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.demo_reading import called, delivered
from core.runs import control
from core.types import AgentSpec
from core.types.people import Person
from core.types.run import RunBudget, RunState, RunStatus
from tests.conftest import make_settings

TOOLS = ("ask_user", "calculate", "finish")


def helper(r: LLMRequest) -> Reply:
    """Asks which city (task "ask"), or sums three times ("spend"); finishes with it."""
    task = r.messages[1].content or ""
    replies = delivered(r, "[Reply from ")
    if replies:
        return Reply(calls=(call("finish", {"result": f"Going with {replies[-1].split()[-1]}."}),))
    if "ask" in task and not called(r, "ask_user"):
        return Reply(calls=(call("ask_user", {"question": "Which city: Lisbon or Porto?"}),))
    if "spend" in task and called(r, "calculate") < 3:
        return Reply(calls=(call("calculate", {"expression": f"{called(r, 'calculate')} + 1"}),))
    return Reply(calls=(call("finish", {"result": f"Done after {called(r, 'calculate')}."}),))


class Session:
    """A run of the helper followed by a console, with the lines to type and the output."""

    def __init__(
        self, make_services: Any, task: str, *, cost: float = 0.0, person: Person | None = None
    ) -> None:
        self.model = ScriptedModel(responder=helper, cost_per_call_usd=cost)
        self.svc = make_services(make_settings(), self.model)
        self.out = io.StringIO()
        console = Console(file=self.out, force_terminal=False, width=200)
        self.lines = Lines()
        thread = ConsoleThread(console)
        self.console = RunConsole(self.svc, console, thread, self.lines, person=person)
        self.task = task

    async def start(
        self, budget: RunBudget | None = None, *, by: str = "console"
    ) -> asyncio.Task[RunState]:
        spec = AgentSpec(name="Helper", role="orchestrator", tools=TOOLS)
        svc = self.svc
        run_id = await control.propose_run(svc, self.task, spec, requested_by=by, budget=budget)
        assert (await control.approve_run(svc, run_id, by)).ok
        return asyncio.create_task(self.console.follow(run_id))

    async def until(self, done: Callable[[], bool]) -> None:
        for _ in range(400):
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"timed out; printed:\n{self.out.getvalue()}")

    @property
    def printed(self) -> str:
        return self.out.getvalue()


async def test_an_agents_question_is_answered_by_the_line_typed(
    make_services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGNAME", "ana")
    s = Session(make_services, "ask me")
    following = await s.start()
    await s.until(lambda: bool(s.console.questions))
    assert "Helper asks: Which city: Lisbon or Porto?" in s.printed
    assert "type your answer and press Enter" in s.printed
    s.lines.put("Porto")
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.COMPLETED and final.result == "Going with Porto."
    assert "question answered by ana" in s.printed  # by name, not the id "console"


async def test_lines_typed_before_anything_is_asked_answer_in_order(make_services) -> None:
    """Piped answers arrive before the run asks: kept, then taken when it asks; what is
    left over goes back for the prompts after the run (the rating)."""
    s = Session(make_services, "ask me")
    for line in ("Lisbon", "4"):
        s.lines.put(line)
    final = await asyncio.wait_for(await s.start(), 10)
    assert final.result == "Going with Lisbon."
    assert "answered with what you typed before: Lisbon" in s.printed
    assert await s.lines.get() == "4"  # the rating's


async def test_c_cancels_the_run_through_core(make_services) -> None:
    s = Session(make_services, "ask me")
    following = await s.start()
    await s.until(lambda: bool(s.console.questions))
    s.lines.put("c")
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.CANCELLED
    assert final.history[-1].by == "console"
    assert "Cancelling: every agent stops within one turn" in s.printed
    assert "cancelled ·" in s.printed and "The run was cancelled." in s.printed


async def test_the_cancel_names_the_person_at_the_terminal(make_services) -> None:
    """Through the people room: runs record the id, people read the name."""
    s = Session(make_services, "ask me", person=Person(id="console", name="Ana"))
    following = await s.start()
    await s.until(lambda: bool(s.console.questions))
    s.lines.put("c")
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.CANCELLED and final.history[-1].by == "console"
    assert "cancelled by Ana" in s.printed  # the run's end, in its result


async def test_a_run_someone_else_asked_for_is_not_cancelled_from_the_console(
    make_services,
) -> None:
    """The people room's rule: only the requester (or an approver) decides about a run."""
    s = Session(make_services, "ask me")
    following = await s.start(by="U0ALICE")
    await s.until(lambda: bool(s.console.questions))
    s.lines.put("c")
    await s.until(lambda: "who asked" in s.printed)
    assert "Only U0ALICE, who asked, or one of the approvers" in s.printed
    assert (await s.svc.store.get_run(s.console.run_id)).status is RunStatus.WAITING_HUMAN
    assert not s.console.cancelled
    s.lines.put("Porto")
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.COMPLETED


async def test_a_first_ctrl_c_cancels_and_a_second_quits(make_services) -> None:
    s = Session(make_services, "ask me")
    following = await s.start()
    await s.until(lambda: bool(s.console.questions))
    s.console.interrupt()
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.CANCELLED
    assert "Ctrl-C: cancelling the run (Ctrl-C again quits at once)" in s.printed

    again = Session(make_services, "ask me")
    following = await again.start()
    await again.until(lambda: bool(again.console.questions))
    again.console.interrupt()
    again.console.interrupt()
    with pytest.raises(Interrupted):
        await asyncio.wait_for(following, 10)


def _paused_budget() -> RunBudget:
    return RunBudget(tokens=1_000_000, cost_usd=1.5, wall_clock_s=600)


async def test_a_paused_run_is_extended_by_the_amount_typed(make_services) -> None:
    s = Session(make_services, "spend", cost=1.0)
    following = await s.start(_paused_budget())
    await s.until(lambda: s.console.budget.pause is not None)
    assert "paused: the run spent $2.00 of $1.50" in s.printed
    assert "e: extend (by $2.00 unless you say more), s: stop" in s.printed
    s.lines.put("e")
    await s.until(lambda: "extend by how many dollars? (enter: $2.00)" in s.printed)
    s.lines.put("nonsense")
    await s.until(lambda: "not an amount: nonsense" in s.printed)
    s.lines.put("3")
    final = await asyncio.wait_for(following, 10)
    assert "extended by $3.00 (now" in s.printed and "$4.50" in s.printed
    assert final.status is RunStatus.COMPLETED and final.result == "Done after 3.", s.printed
    assert final.budget is not None and final.budget.cost_usd == 4.5


async def test_a_paused_run_is_stopped_with_s_or_when_input_ends(make_services) -> None:
    s = Session(make_services, "spend", cost=1.0)
    following = await s.start(_paused_budget())
    await s.until(lambda: s.console.budget.pause is not None)
    s.lines.put("e")  # then changes their mind instead of saying how much
    await s.until(lambda: "extend by how many dollars?" in s.printed)
    s.lines.put("s")
    final = await asyncio.wait_for(following, 10)
    assert final.status is RunStatus.FAILED  # nobody had finished yet
    assert "stopped at the budget, with the results so far" in s.printed

    ended = Session(make_services, "spend", cost=1.0)
    ended.lines.put(None)  # a pipe that closed: nobody can extend it
    final = await asyncio.wait_for(await ended.start(_paused_budget()), 10)
    assert final.status is RunStatus.FAILED
    assert "no more input: stopping the run at its budget" in ended.printed
