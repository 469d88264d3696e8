"""Agents asking people: open questions, answers from chat, and time-outs.

``ask_user`` ends the agent's turn in ``waiting_human`` without holding a worker; the
question is kept by ``core.state.questions`` and the run shows ``waiting_human``.
:func:`answer_question` (called by the chat adapters) delivers the answer as a message
and wakes the agent; a timer wakes it at the deadline, and the turn then closes the
question with a time-out note. HDEL is the claim: an answer and a time-out racing close
the question once.
"""

from __future__ import annotations

import time

from core.agent.wake import wake_agent
from core.errors import UsageError
from core.services import Services
from core.state import approvals as approvals_book
from core.state import questions as book
from core.state.questions import OpenQuestion
from core.state.store import PipelineWrite, RunChange, TransitionResult, transition
from core.types.events import QuestionAsked, QuestionClosed, RunEvent, RunStatusChanged
from core.types.messages import HumanReply
from core.types.run import RunState, RunStatus


def question_id(agent_id: str, seq: int) -> str:
    """Deterministic per turn, so a re-delivered turn asks the same question once."""
    return f"q-{agent_id}-{seq}"


def ask_write(svc: Services, q: OpenQuestion) -> PipelineWrite:
    return book.ask_write(svc.store, q)


def asked_change(q: OpenQuestion) -> RunChange:
    """The run shows waiting_human while a question is open."""

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        events: list[RunEvent] = [
            QuestionAsked(
                run_id=q.run_id,
                agent_id=q.agent_id,
                question_id=q.id,
                question=q.question,
                timeout_s=q.deadline - q.asked_at,
            )
        ]
        if run.status is not RunStatus.RUNNING:
            return None, events
        new = transition(run, RunStatus.WAITING_HUMAN, by=q.agent_id, note="asked a question")
        events.append(
            RunStatusChanged(
                run_id=run.id, status=RunStatus.WAITING_HUMAN, by=q.agent_id, note=q.question
            )
        )
        return new.run, events

    return change


async def open_questions(svc: Services, run_id: str) -> list[OpenQuestion]:
    """The run's open questions, oldest first."""
    return await book.open_questions(svc.store, run_id)


async def _closed(svc: Services, q: OpenQuestion, event: QuestionClosed) -> None:
    """Record the closing and, with no question left and no pause, the run runs again."""
    left = await book.count(svc.store, q.run_id)
    left += await approvals_book.open_count(svc.store, q.run_id)  # calls waiting too

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if left or run.paused or run.status is not RunStatus.WAITING_HUMAN:
            return None, [event]
        by = event.by or "caramba"
        new = transition(run, RunStatus.RUNNING, by=by, note="question closed")
        return new.run, [event, RunStatusChanged(run_id=run.id, status=RunStatus.RUNNING, by=by)]

    await svc.store.update_run(q.run_id, change)


async def answer_question(
    svc: Services, run_id: str, answer: str, by: str, question_id: str | None = None
) -> TransitionResult:
    """Deliver a person's answer to the agent that asked (the oldest open question when
    ``question_id`` is not given) and wake it. ``ok=False`` says why nothing was done."""
    run = await svc.store.get_run(run_id)
    if run.status.terminal:
        return TransitionResult(False, run, f"this run {run.status.words}")
    if not answer.strip():
        raise UsageError("the answer is empty", hint="write an answer to the agent's question")
    pending = await open_questions(svc, run_id)
    if question_id is None and pending:
        question_id = pending[0].id
    q = await book.claim(svc.store, run_id, question_id) if question_id else None
    if q is None:
        return TransitionResult(False, run, "nobody in this run is waiting for an answer")
    await svc.bus.deliver(run_id, _reply(run_id, q.agent_id, answer, by))
    await _closed(
        svc,
        q,
        QuestionClosed(
            run_id=run_id, agent_id=q.agent_id, question_id=q.id, answer=answer[:500], by=by
        ),
    )
    # Woken once the run shows running again.
    await wake_agent(svc, run_id, q.agent_id)
    return TransitionResult(True, await svc.store.get_run(run_id))


async def expire_if_due(svc: Services, run_id: str, qid: str) -> OpenQuestion | None:
    """Close the question if its deadline passed (and nobody answered); return it then."""
    found = await book.get(svc.store, run_id, qid)
    if found is None or found.deadline > time.time():
        return None
    q = await book.claim(svc.store, run_id, qid)
    if q is not None:
        await _closed(
            svc,
            q,
            QuestionClosed(run_id=run_id, agent_id=q.agent_id, question_id=q.id, timed_out=True),
        )
    return q


async def get(svc: Services, run_id: str, qid: str) -> OpenQuestion | None:
    return await book.get(svc.store, run_id, qid)


async def follow_up(svc: Services, run_id: str, text: str, by: str) -> TransitionResult:
    """A person's message to a running run that answers no question: delivered to the
    run's top agent (the one that reports to people), woken to read it on its next turn."""
    run = await svc.store.get_run(run_id)
    if run.status not in (RunStatus.RUNNING, RunStatus.WAITING_HUMAN):
        return TransitionResult(False, run, f"this run {run.status.words}")
    if not text.strip():
        raise UsageError("the message is empty", hint="write what the agents should know")
    top = run.root_agent_id
    found = await svc.store.load_spec(run_id, top) if top else None
    if top is None or found is None or found[1].terminal:
        return TransitionResult(False, run, "the run's top agent has already finished")
    await svc.bus.deliver(run_id, _reply(run_id, top, text, by))
    await wake_agent(svc, run_id, top)
    return TransitionResult(True, run)


def _reply(run_id: str, agent_id: str, text: str, by: str) -> HumanReply:
    """A person's words for an agent's inbox."""
    return HumanReply(run_id=run_id, sender=by, recipient=agent_id, body=text, author=by)
