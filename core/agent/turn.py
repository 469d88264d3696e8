"""The agent turn: one model call and the tools it asks for, saved atomically, in five
phases (``core.agent.phases``), each a small module with a typed result:

1. prepare  — load the turn, check it is this delivery's to run and within its limits
   (the run's end, the quarantine, the run's pause and budget), read the agent's mail,
   build the request;
2. model    — call the model (or reuse the answer an earlier delivery saved);
3. tools    — run the calls it asked for (read-only ones together);
4. resolve  — the next step: the end ladder, a question, a wait, or run again;
5. commit   — save the turn as its step says, then its follow-ups.

A phase returns its result for the next, or a typed next step (``core.agent.steps``:
``RunAgain | Wait | Finish | Pause | Drop``) that ends the turn early; the commit phase
applies it. Turns are idempotent by sequence number: a job whose ``seq`` is not the
agent's current one is dropped, and the save is a compare-and-set on ``seq`` that also
sends the turn's messages, creates its agents and acknowledges the messages it read, so a
turn delivered twice (a retrying broker, a crashed worker, a double submit) is applied
once.

Round trips to Redis (issue 25: four or fewer): the start script (the lease taken, the
turn and its mail read), the model's answer kept before tools that have effects or take
time (``core.agent.phases.model``), and the save script (the save, the wake-up claims, the
follow-ups' record, the lease released). Scheduling what follows is the scheduler's, not
Redis's: in-process inline; a publish to the broker with Celery.

Owns the turn's spine, its lease and its telemetry span; may call the phases, the lease
(``core.agent.lease``), the store's delivery count and telemetry."""

from __future__ import annotations

import contextlib
import logging

from core import telemetry
from core.agent.lease import Held, turn_lease, unleased
from core.agent.phases import commit, model, prepare, resolve, tools
from core.agent.phases.current import Called, Ready, Turn
from core.agent.steps import Drop, Step
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services

log = logging.getLogger(__name__)


async def run_turn(svc: Services, job: TurnJob) -> TurnOutcome:
    """Run one turn of one agent. Safe to call twice with one job, at once or later."""
    async with turn_lease(svc, job) as held:
        if held is None:
            log.info("turn %s: another delivery is running it; dropped", job)
            return TurnOutcome.DROPPED
        with telemetry.turn(job.run_id, job.agent_id, job.seq) as traced:
            try:
                return traced.outcome(await _run(svc, job, held))
            except Exception:
                # A failure, not a death: counted apart (limits.max_deliveries against
                # limits.max_crashes). Best effort: the error is what matters here.
                with contextlib.suppress(Exception):
                    await svc.store.count_delivery(job.run_id, job.agent_id, job.seq, failed=True)
                raise


async def _run(svc: Services, job: TurnJob, held: Held | None = None) -> TurnOutcome:
    """prepare → call the model → run tools → resolve the next step → commit (``held``:
    the lease and the start; None: started without the lease)."""
    if held is None:
        held = await unleased(svc, job)
    turn = await prepare.load(svc, job, held)
    if isinstance(turn, Drop):
        return TurnOutcome.DROPPED
    return await commit.commit(turn, await _next_step(turn))


async def _next_step(turn: Turn) -> Step:
    """Each phase hands the next its result, or a step that ends the turn early."""
    ready = await prepare.prepare(turn)
    if not isinstance(ready, Ready):
        return ready
    called = await model.call(turn, ready)
    if not isinstance(called, Called):
        return called
    ran = await tools.run(turn, ready, called)
    return resolve.next_step(turn, ran)
