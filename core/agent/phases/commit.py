"""Commit: apply the turn's next step. An end is saved by ``core.agent.lifecycle``; a
turn that goes on (or waits) is saved with its events, its usage, a question it asked
and the pause of a run that reached a limit, in one compare-and-set on the agent's seq
(the store's commit, whose token makes a save whose reply was lost count as saved). The
same script claims the wake-ups, records the follow-ups and releases the lease
(``TurnIO.after_save``). Once saved: the follow-ups (intents, new agents' first turns,
wake-ups, the next turn). A :class:`~core.agent.steps.Pause` or
:class:`~core.agent.steps.Drop` saves nothing.

May call the store's commit, ``core.agent`` (lifecycle, limits, questions, faults, the
turn's writes through ``TurnIO``); never the Redis client."""

from __future__ import annotations

import time
from typing import assert_never

from core.agent import approvals, faults, limits, questions
from core.agent.lifecycle import end_agent
from core.agent.phases.current import Turn
from core.agent.steps import Drop, Finish, Pause, RunAgain, Step, Wait
from core.scheduler.base import TurnOutcome
from core.state.store import RunChange, chain
from core.types.agent import AgentStatus


async def commit(turn: Turn, step: Step) -> TurnOutcome:
    """Save the turn as ``step`` says, and say what it came to."""
    match step:
        case Drop():
            return TurnOutcome.DROPPED
        case Pause():
            return TurnOutcome.PARKED
        case Finish(reason=reason, detail=detail):
            _advance(turn)
            saved = await end_agent(
                turn.io, turn.expected, turn.events, turn.usage, reason, detail, _lease(turn)
            )
            _released(turn)
            if not saved.saved:
                return TurnOutcome.DROPPED
            return await _followed(turn, TurnOutcome.ENDED, saved.jobs)
        case RunAgain() | Wait():
            return await _save(turn, step)
        case _:
            assert_never(step)


def _advance(turn: Turn) -> None:
    """The agent's seq moves on; the agents it created this turn are its children."""
    state = turn.state
    state.seq = turn.expected + 1
    spawned = [c.spec.id for c in turn.io.ctx.spawned]
    state.children = list(dict.fromkeys([*state.children, *spawned]))


async def _save(turn: Turn, step: RunAgain | Wait) -> TurnOutcome:
    state = turn.state
    _advance(turn)
    asked = _ask(turn, step.question) if isinstance(step, Wait) else None
    held = approvals.held_change(turn.io) if isinstance(step, Wait) else None
    state.status = (
        AgentStatus.WAITING_HUMAN
        if asked is not None or held is not None
        else AgentStatus.WAITING
        if isinstance(step, Wait)
        else AgentStatus.RUNNING
    )
    state.updated_at = time.time()
    saved = await turn.svc.store.commit_turn(
        state,
        turn.expected,
        [*turn.events, *turn.io.events()],
        turn.usage,
        run_change=chain(_pause(turn), asked, held),
        writes=turn.io.writes(),
        after=turn.io.after_save(_lease(turn)),
    )
    _released(turn)
    if not saved.saved:
        return TurnOutcome.DROPPED
    turn.svc.store.hold_created(turn.io.ctx.spawned)
    outcome = TurnOutcome.WAITING if isinstance(step, Wait) else TurnOutcome.CONTINUED
    return await _followed(turn, outcome, saved.jobs)


def _lease(turn: Turn) -> tuple[str, str] | None:
    """The lease the save releases (its key and this delivery's token)."""
    held = turn.held
    return None if held is None or not held.lease.token else held.key_and_token


def _released(turn: Turn) -> None:
    # The save script let the lease go (saved or not): nothing to release after it.
    if turn.held is not None:
        turn.held.released = True


def _pause(turn: Turn) -> RunChange | None:
    """The run's own limits pause it for a person to extend, rather than end agents."""
    run_usage = turn.run_usage + turn.usage
    found = limits.breach(turn.run, run_usage, time.time())
    return None if found is None else limits.pause_change(turn.svc, found, run_usage, turn.run)


def _ask(turn: Turn, question: str | None) -> RunChange | None:
    """Open the question the agent asked a person (saved with the turn)."""
    if question is None:
        return None
    state, now = turn.state, time.time()
    turn.io.question = questions.OpenQuestion(
        id=questions.question_id(state.spec.id, turn.expected),
        run_id=turn.job.run_id,
        agent_id=state.spec.id,
        question=question,
        asked_at=now,
        deadline=now + turn.svc.settings.humans.question_timeout_s,
    )
    state.open_question = turn.io.question.id
    return questions.asked_change(turn.io.question)


async def _followed(turn: Turn, outcome: TurnOutcome, jobs: list[tuple[str, int]]) -> TurnOutcome:
    """Saved: the follow-ups (the next turn is one of them)."""
    await faults.point(turn.svc, "after_commit")
    await turn.io.after_commit(jobs)
    return outcome
