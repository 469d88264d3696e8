"""Waking agents: a turn for a waiting agent, the follow-ups of a saved turn (its new
agents' first turns, its recipients' wake-ups, its own next turn: claimed and recorded by
the save script, scheduled here, redone by a late copy when never started), and nudges
that give parked or waiting agents a turn (to resume, or to stop with their run)."""

from __future__ import annotations

from collections.abc import Sequence

from core.scheduler.base import TurnJob
from core.services import Services
from core.state import agents, parking
from core.state.turn_script import parse_jobs
from core.types._base import Frozen


async def wake_agent(svc: Services, run_id: str, agent_id: str) -> bool:
    """Schedule one turn for a waiting agent (no-op if it is not waiting or already woken)."""
    seq = await svc.bus.claim_wake(run_id, agent_id)
    if seq is None:
        return False
    await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=agent_id, seq=seq))
    return True


async def submit_jobs(svc: Services, run_id: str, jobs: Sequence[tuple[str, int]]) -> None:
    """Schedule the turns a save asked for (``Saved.jobs``), in its order."""
    for agent_id, seq in jobs:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=agent_id, seq=seq))


class FollowUps(Frozen):
    """A follow-ups record as workers wrote it before the records were job lists (read
    only, when a late copy finds one): its new agents' first turns, its recipients'
    wake-ups, its own next turn."""

    seq: int
    children: tuple[str, ...] = ()
    recipients: tuple[str, ...] = ()
    # The agent's next turn, when it goes on running.
    next_seq: int | None = None


async def redo_followups(svc: Services, job: TurnJob, jobs: list[str], legacy: str | None) -> bool:
    """Schedule the follow-ups of turn ``job.seq`` that were saved and never started (its
    worker died before scheduling them). The save script keeps them with the turn as a
    record (``core.state.turn_script``); the start script of a late copy finds those whose
    turn was never delivered. Both steps are idempotent: a duplicate turn is dropped."""
    old = None if legacy is None else FollowUps.model_validate_json(legacy)
    if old is not None and old.seq == job.seq:
        return await _redo_legacy(svc, job, old)
    if not jobs:
        return False
    await submit_jobs(svc, job.run_id, parse_jobs(f"{job.seq}|{' '.join(jobs)}", job.seq))
    svc.store.turns.done(job.run_id, job.agent_id, job.seq)
    return True


async def _redo_legacy(svc: Services, job: TurnJob, followups: FollowUps) -> bool:
    run_id, agent_id = job.run_id, job.agent_id
    for child in followups.children:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=child, seq=0))
    for recipient in followups.recipients:
        await wake_agent(svc, run_id, recipient)
    if followups.next_seq is not None:
        await svc.scheduler.submit(
            TurnJob(run_id=run_id, agent_id=agent_id, seq=followups.next_seq)
        )
    await agents.clear_followups(svc.store, run_id, agent_id)
    return True


async def nudge_all(svc: Services, run_id: str) -> None:
    """After the run ended: give every agent that is not finished one turn, to stop.

    Submitted directly, not through a wake-up claim: a claim left by a lost wake-up
    must not keep a waiting agent from stopping. A duplicate turn is dropped.
    """
    await parking.clear(svc.store, run_id)
    for agent_id in await svc.store.agent_ids(run_id):
        await nudge(svc, run_id, agent_id, force=True)


async def nudge(svc: Services, run_id: str, agent_id: str, *, force: bool = False) -> None:
    """Give a parked or waiting agent a turn (``force``: even past a wake-up claim)."""
    found = await agents.status_and_seq(svc.store, run_id, agent_id)
    if found is None:
        return
    status, seq = found
    if status.terminal:
        return
    if status.waiting and not force:
        await wake_agent(svc, run_id, agent_id)
    else:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=agent_id, seq=seq))
