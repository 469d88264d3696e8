"""Prepare: load the turn and check it is this delivery's to run, then its limits (the
run's state, the quarantine, the run's pause and budget), read the agent's mail and build
the request. Returns the :class:`~core.agent.phases.current.Ready` request, or the step
that ends the turn before any model call.

May call ``core.agent`` (limits, quarantine, wake, the turn's inbox through ``TurnIO``:
the lease's start script read it) and ``core.agent.phases.request``; never the Redis client."""

from __future__ import annotations

import logging
import time

from core import telemetry
from core.agent import approvals, limits, responses
from core.agent.lease import Held
from core.agent.limits import limits_for
from core.agent.phases.current import Ready, Turn
from core.agent.phases.request import build
from core.agent.quarantine import quarantine_reason
from core.agent.steps import Drop, Finish, Pause, Step
from core.agent.turn_io import TurnIO
from core.agent.wake import redo_followups
from core.scheduler.base import TurnJob
from core.services import Services
from core.state.turn_start import StartReply
from core.types.agent import AgentState, EndReason

log = logging.getLogger(__name__)


async def load(svc: Services, job: TurnJob, held: Held) -> Turn | Drop:
    """The turn, when the job is the agent's current turn; else a :class:`Drop` (after
    redoing the follow-ups of a save whose worker died, or releasing a stale wake-up)."""
    state, run, deliveries, failures, run_usage, raw_saved, reply = held.start
    telemetry.turn_read(run.traceparent, state)
    if state is None:
        log.warning(
            "turn %s: no such agent (its run was never created, or a Redis failover lost "
            "its creation); dropped",
            job,
        )
        return Drop("unknown agent")
    if not reply.current:
        await _after_stale(svc, job, state, reply)
        return Drop("not the agent's current turn")
    caps = limits_for(svc.settings, state)
    io = TurnIO(svc, state)
    turn = Turn(svc, job, io, caps, run, run_usage, responses.parse(raw_saved), held=held)
    turn.quarantined = quarantine_reason(
        svc.settings.limits, job.seq, deliveries, failures, reply.waits
    )
    return turn


async def _after_stale(svc: Services, job: TurnJob, state: AgentState, reply: StartReply) -> None:
    # Saved by a delivery whose worker may have died before its follow-ups (new agents'
    # first turns, wake-ups, the next turn): the start script found those never started.
    redone = state.seq == job.seq + 1 and await redo_followups(svc, job, reply.redo, reply.legacy)
    if (
        not redone
        and state.status.waiting
        and await svc.bus.release_stale_wake(job.run_id, job.agent_id, job.seq)
    ):
        # A wake-up claimed for an older turn: release it and look at the mail again.
        await TurnIO(svc, state).spurious_wake()


async def prepare(turn: Turn) -> Ready | Step:
    """Check the turn's limits, read its mail and build its request."""
    stop = await _admit(turn)
    if stop is None:
        stop = await _read_mail(turn)
    return stop if stop is not None else await build(turn)


async def _admit(turn: Turn) -> Step | None:
    """The run's end, the quarantine and the run's pause or limits, before anything."""
    if turn.run.status.terminal:
        return Finish(EndReason.CANCELLED, f"the run is {turn.run.status.value}")
    if turn.quarantined is not None:
        assert turn.held is not None
        turn.io.quarantine(turn.held.start.reply)
        return Finish(EndReason.QUARANTINED, turn.quarantined)
    limit_hit = limits.breach(turn.run, turn.run_usage, time.time())
    if turn.run.paused or limit_hit is not None:
        found = None if turn.run.paused else limit_hit
        if await limits.hold(turn.svc, turn.job, found, turn.run_usage, turn.run):
            return Pause()
    return None


async def _read_mail(turn: Turn) -> Step | None:
    """Drain the inbox (and close an answered or timed-out question); a waiting agent
    woken with nothing to read goes back to sleep."""
    io, state = turn.io, turn.state
    # Read by the start script. An earlier delivery of this turn saved the model's answer:
    # the script read the messages it read (pending), not newer ones, so the request is the
    # same and the answer is reused.
    assert turn.held is not None
    settled = False
    if state.open_approval is not None:
        allowed = [n for n in state.spec.tools if n in turn.svc.tools]
        found = await approvals.settle(io, allowed)
        if found is None:  # still waiting: the mail stays in the inbox until then
            await approvals.still_waiting(io)
            return Drop("a tool call waits for a person's approval")
        settled = found
    arrived = await io.take_mail(turn.held.start.reply) + settled
    if state.open_question is not None:
        arrived += await io.close_question(state.open_question)
    if arrived:
        # News since the last call: repeating a call now is not a loop (limits.note_call).
        state.recent_calls = []
    if state.status.waiting and not arrived and not io.dead:
        await io.spurious_wake()
        return Drop("woken with nothing to read")
    return None
