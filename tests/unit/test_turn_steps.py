"""The resolve phase's end ladder and next step, on a turn built in memory (no Redis):
finish first, then a reply without a call, a stall, the token, cost and turn caps; then
a question, a wait, or run again."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent.limits import AgentLimits
from core.agent.phases.current import Ran, Turn
from core.agent.phases.resolve import next_step
from core.agent.steps import Finish, RunAgain, Wait
from core.agent.turn_io import TurnIO
from core.llm.scripted import ScriptedModel
from core.scheduler.base import TurnJob
from core.types import AgentSpec
from core.types.agent import AgentState, EndReason
from core.types.chat import Usage
from core.types.run import RunHead, RunStatus
from tests.conftest import make_settings

CAPS = AgentLimits(max_turns=5, max_tokens=1000, max_cost_usd=1.0)


@pytest.fixture
def turn(make_services: Any) -> Turn:
    svc = make_services(make_settings(), ScriptedModel(), start=False)
    state = AgentState(spec=AgentSpec(name="Solo"), run_id="r1", seq=1)
    state.recent_calls = ["roster({})"]
    job = TurnJob(run_id="r1", agent_id=state.spec.id, seq=1)
    head = RunHead(id="r1", status=RunStatus.RUNNING)
    return Turn(svc, job, TurnIO(svc, state), CAPS, head, Usage(), None)


def test_the_end_ladder_in_order(turn: Turn) -> None:
    ctx, state = turn.io.ctx, turn.state
    state.usage = Usage(completion_tokens=2000, cost_usd=2.0)
    ctx.finish_result = "done"
    ctx.question = "which day?"
    ended = Ran(stalled=True, text_end=(EndReason.STALLED, "same text"))
    assert next_step(turn, ended) == Finish(EndReason.FINISHED)
    assert state.result == "done"
    ctx.finish_result = None
    assert next_step(turn, ended) == Finish(EndReason.STALLED, "same text")
    repeats = turn.svc.settings.limits.stall_repeats
    assert next_step(turn, Ran(stalled=True, text_end=None)) == Finish(
        EndReason.STALLED, f"repeated the same call {repeats} times in a row: roster({{}})"
    )
    go_on = Ran(stalled=False, text_end=None)
    assert next_step(turn, go_on) == Finish(
        EndReason.MAX_TOKENS, "used 2,000 tokens (agent limit 1,000)"
    )
    state.usage = Usage(completion_tokens=10, cost_usd=2.0)
    assert next_step(turn, go_on) == Finish(EndReason.MAX_COST, "spent $2.00 (agent limit $1.00)")
    state.usage = Usage(completion_tokens=10)
    turn.io.seq = 4  # this turn is the fifth: the cap counts it
    assert next_step(turn, go_on) == Finish(
        EndReason.MAX_TURNS, "took 5 turns without calling finish (limit 5)"
    )


def test_a_question_a_wait_or_run_again(turn: Turn) -> None:
    ctx, go_on = turn.io.ctx, Ran(stalled=False, text_end=None)
    assert next_step(turn, go_on) == RunAgain()
    ctx.wait = True
    assert next_step(turn, go_on) == Wait()
    ctx.question = "which day?"
    assert next_step(turn, go_on) == Wait(question="which day?")


def test_a_limit_judged_before_a_person_extended_the_run_does_not_pause_it_again() -> None:
    """A turn that read the run before a person extended it finds the old limit reached;
    its pause must not undo the extension (the run stayed paused with nothing to extend:
    tests/scenarios/test_control.py's budget test, one in three on Python 3.13)."""
    from core.agent.limits import Breach, pause_change
    from core.types.run import RunBudget, RunState

    svc: Any = type("Svc", (), {"settings": make_settings()})()
    used = Usage(prompt_tokens=1800, completion_tokens=200)
    old = RunBudget(tokens=2000, cost_usd=1.0, wall_clock_s=600)
    seen = RunHead(id="r", status=RunStatus.RUNNING, budget=old)
    found = Breach("tokens", "the run used 2,000 of 2,000 tokens")
    extended = RunState(
        id="r", task="t", status=RunStatus.RUNNING, budget=old.model_copy(update={"tokens": 7000})
    )
    assert pause_change(svc, found, used, seen)(extended) == (None, [])
    # Judged against the run as it is: paused, and people are asked.
    same = extended.model_copy(update={"budget": old})
    paused, events = pause_change(svc, found, used, seen)(same)
    assert paused is not None and paused.paused == "tokens"
    assert paused.status is RunStatus.WAITING_HUMAN and len(events) == 2
