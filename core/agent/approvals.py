"""Tool calls that wait for a person's approval (``[tools.approval]``), like ``ask_user``:
the call does not run; the turn saves a note in its place, the request
(``core.state.approvals``) and the agent in ``waiting_human`` (the run too), and ends
without holding a worker. Mail that comes meanwhile waits in the inbox.

A decision (:func:`decide`, called by ``core.runs.people.approve_action``) is recorded
once (HSETNX: concurrent clicks make one decision) and wakes the agent; a timer wakes it
at the deadline. The woken turn (:func:`settle`, before it reads its mail) replaces the
note with the outcome: the call's result — run by the one delivery that claims it
(``started``), its result kept before the turn's save, so a worker killed after the
approval neither loses the call nor runs it twice (a kill during the call itself is
said: the agent checks) — or "Denied by Alice: …", or that nobody decided in time.

May call ``core.state`` (approvals, questions, the store), ``core.effects.timers``,
``core.agent.wake`` and the tool registry through the services; never the Redis client."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from core.agent import faults
from core.agent.turn_io import TurnIO
from core.agent.wake import wake_agent
from core.services import Services
from core.state import agents, questions
from core.state import approvals as book
from core.state.store import RunChange, TransitionResult, transition
from core.types.approvals import ApprovalDecision, ApprovalRequest, shown_arguments
from core.types.chat import ChatMessage, ToolCall
from core.types.events import (
    ApprovalAsked,
    ApprovalDecided,
    RunEvent,
    RunStatusChanged,
    ToolCalled,
)
from core.types.run import RunState, RunStatus

_REASON_CHARS = 500


def approval_id(agent_id: str, seq: int, index: int = 0) -> str:
    """Deterministic per turn, so a re-delivered turn asks once."""
    return f"a-{agent_id}-{seq}-{index}"


async def first_gated(io: TurnIO, calls: Sequence[ToolCall], allowed: Sequence[str]) -> int | None:
    """The index of the first call that must wait for a person, or None."""
    svc = io.svc
    policy = svc.settings.tools.approval
    for i, call in enumerate(calls):
        if call.name not in allowed or not svc.tools.asks(call.name, policy):
            continue
        if not await book.granted(svc.store, io.run_id, call.name):
            return i
    return None


def hold(io: TurnIO, call: ToolCall, index: int, text: str) -> str:
    """Stage the request for ``call`` (saved with the turn) and return the note that
    stands in its place in the thread until it is decided."""
    svc, state = io.svc, io.state
    t = svc.tools.get(call.name)
    policy, now = svc.settings.tools.approval, time.time()
    io.approval = ApprovalRequest(
        id=approval_id(state.spec.id, io.seq, index),
        run_id=io.run_id,
        agent_id=state.spec.id,
        agent_name=state.spec.name,
        call_id=call.id,
        tool=call.name,
        purpose=t.purpose if t is not None else call.name,
        risks=tuple(t.risks()) if t is not None else (),
        arguments=shown_arguments(call.arguments, policy.arguments_chars),
        reason=_reason(call, text),
        asked_at=now,
        deadline=now + policy.timeout_s,
    )
    return svc.prompts.render("feedback/approval_waiting.j2", name=call.name)


def not_run(io: TurnIO, waiting: ToolCall) -> str:
    """The result of a call that came after one waiting for approval (not run)."""
    return io.svc.prompts.render("feedback/approval_not_run.j2", waiting_tool=waiting.name)


def _reason(call: ToolCall, text: str) -> str:
    """Why the agent makes the call: its ``reason`` argument if it gave one, else the
    text it wrote with the call."""
    try:
        given = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        given = None
    if isinstance(given, dict) and isinstance(given.get("reason"), str) and given["reason"]:
        text = given["reason"]
    text = " ".join(text.split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def held_change(io: TurnIO) -> RunChange | None:
    """The run shows ``waiting_human`` while the call waits (saved with the turn)."""
    request = io.approval
    if request is None:
        return None
    io.state.open_approval = request.id

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        events: list[RunEvent] = [
            ApprovalAsked(run_id=run.id, agent_id=request.agent_id, request=request)
        ]
        if run.status is not RunStatus.RUNNING:
            return None, events
        note = f"waits for approval of {request.tool}"
        new = transition(run, RunStatus.WAITING_HUMAN, by=request.agent_id, note=note)
        events.append(
            RunStatusChanged(
                run_id=run.id, status=RunStatus.WAITING_HUMAN, by=request.agent_id, note=note
            )
        )
        return new.run, events

    return change


async def request(svc: Services, run_id: str, approval_id: str) -> ApprovalRequest | None:
    return await book.get(svc.store, run_id, approval_id)


async def pending(svc: Services, run_id: str) -> list[ApprovalRequest]:
    """The run's calls waiting for a decision, oldest first."""
    return [r for r, made in await book.every(svc.store, run_id) if made is None]


async def decide(
    svc: Services, run_id: str, approval_id: str, made: ApprovalDecision
) -> TransitionResult:
    """Record a person's decision about a waiting call (once: a decision made first
    wins; ``ok=False`` says which) and wake the agent that asked."""
    run = await svc.store.get_run(run_id)
    if run.status.terminal:
        return TransitionResult(False, run, f"this run {run.status.words}")
    request = await book.get(svc.store, run_id, approval_id)
    if request is None:
        return TransitionResult(False, run, "no call of this run waits for that approval")
    first = await book.decide(svc.store, run_id, request, made)
    if first is not None:
        return TransitionResult(False, run, f"it was already decided: {first.said()}")
    await _decided(svc, request, made)
    await wake_agent(svc, run_id, request.agent_id)
    return TransitionResult(True, await svc.store.get_run(run_id), "")


async def _decided(svc: Services, request: ApprovalRequest, made: ApprovalDecision) -> None:
    """The decision's event; with nothing else waiting for a person, the run runs again."""
    left = await book.open_count(svc.store, request.run_id)
    left += await questions.count(svc.store, request.run_id)
    event = ApprovalDecided(
        run_id=request.run_id,
        agent_id=request.agent_id,
        approval_id=request.id,
        tool=request.tool,
        decision=made,
    )

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if left or run.paused or run.status is not RunStatus.WAITING_HUMAN:
            return None, [event]
        by = made.by or "caramba"
        new = transition(run, RunStatus.RUNNING, by=by, note=made.said())
        return new.run, [event, RunStatusChanged(run_id=run.id, status=RunStatus.RUNNING, by=by)]

    await svc.store.update_run(request.run_id, change)


async def settle(io: TurnIO, allowed: Sequence[str]) -> bool | None:
    """The woken turn's part: None while the call still waits (the turn is dropped and
    its mail kept); else its outcome replaces the note in the thread (True)."""
    svc, state = io.svc, io.state
    aid = state.open_approval
    assert aid is not None
    request = await book.get(svc.store, io.run_id, aid)
    made = await book.decision(svc.store, io.run_id, aid)
    if request is None:
        state.open_approval = None
        return False
    if made is None:
        if request.deadline > time.time():
            return None
        made = ApprovalDecision.expired()
        first = await book.decide(svc.store, io.run_id, request, made)
        if first is None:
            await _decided(svc, request, made)
        made = first or made
    started = time.time()
    ok, content = await _outcome(io, request, made, allowed)
    _place(state.thread, request.call_id, content)
    state.open_approval = None
    io.settled.append(
        ToolCalled(
            run_id=io.run_id,
            agent_id=state.spec.id,
            seq=io.seq,
            tool=request.tool,
            arguments=request.arguments,
            ok=ok,
            result=content[:500],
            started_at=started,
            duration_s=time.time() - started,
        )
    )
    return True


async def still_waiting(io: TurnIO) -> None:
    """Woken while the call still waits (mail came): release the wake-up claim, this
    delivery counted as a wait, not as a death of the turn (more mail than
    ``limits.max_crashes`` during a long wait must not quarantine it); if a decision came
    meanwhile (its wake-up found the claim held), wake the agent again."""
    await agents.release_waiting(io.svc.store, io.run_id, io.state.spec.id, io.seq)
    aid = io.state.open_approval
    if aid is not None and await book.decision(io.svc.store, io.run_id, aid) is not None:
        await wake_agent(io.svc, io.run_id, io.state.spec.id)


async def _outcome(
    io: TurnIO, request: ApprovalRequest, made: ApprovalDecision, allowed: Sequence[str]
) -> tuple[bool, str]:
    """(ok, content) of the decided call: run once if approved, else why not."""
    svc, render = io.svc, io.svc.prompts.render
    if made.choice == "expired":
        timeout = request.deadline - request.asked_at
        return False, render("feedback/approval_expired.j2", name=request.tool, timeout_s=timeout)
    if not made.approved:
        return False, render("feedback/approval_denied.j2", name=request.tool, decided=made.said())
    if not await book.start(svc.store, io.run_id, request.id):
        kept = await book.result(svc.store, io.run_id, request.id)
        if kept is not None:
            return True, kept
        return False, render("feedback/approval_unknown.j2", name=request.tool, decided=made.said())
    call = _call(io.state.thread, request.call_id, request.tool)
    limit = svc.settings.limits.tool_result_chars
    result = await svc.tools.execute(io.ctx, call, list(allowed), svc.prompts, limit)
    await book.keep_result(svc.store, io.run_id, request.id, result.content)
    await faults.point(svc, "approved_call_kept")
    return result.ok, result.content


def _call(thread: list[ChatMessage], call_id: str, tool: str) -> ToolCall:
    """The call as the model wrote it (arguments unmasked), from the agent's thread."""
    for message in reversed(thread):
        for call in message.tool_calls:
            if call.id == call_id:
                return call
    return ToolCall(id=call_id, name=tool)


def _place(thread: list[ChatMessage], call_id: str, content: str) -> None:
    """Put ``content`` where the call's note stands."""
    for i in range(len(thread) - 1, -1, -1):
        message = thread[i]
        if message.role == "tool" and message.tool_call_id == call_id:
            thread[i] = message.model_copy(update={"content": content})
            return
