"""Waking agents: a turn for a waiting agent, the follow-ups of a saved turn (its new
agents' first turns, its recipients' wake-ups, its own next turn), and nudges that give
parked or waiting agents a turn (to resume, or to stop with their run)."""

from __future__ import annotations

from core.scheduler.base import TurnJob
from core.services import Services
from core.state import agents, parking
from core.types._base import Frozen


async def wake_agent(svc: Services, run_id: str, agent_id: str) -> bool:
    """Schedule one turn for a waiting agent (no-op if it is not waiting or already woken)."""
    seq = await svc.bus.claim_wake(run_id, agent_id)
    if seq is None:
        return False
    await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=agent_id, seq=seq))
    return True


class FollowUps(Frozen):
    """What must happen after a saved turn: its new agents' first turns, its recipients'
    wake-ups, its own next turn. Saved with the turn and cleared once done, so a worker
    that dies between the save and these steps leaves them for the turn's next delivery
    to redo — and only then: a late duplicate of a turn whose follow-ups were done
    schedules nothing (an unconditional resubmit would duplicate every later turn)."""

    seq: int
    children: tuple[str, ...] = ()
    recipients: tuple[str, ...] = ()
    # The agent's next turn, when it goes on running.
    next_seq: int | None = None


async def run_followups(svc: Services, run_id: str, agent_id: str, followups: FollowUps) -> None:
    for child in followups.children:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=child, seq=0))
    for recipient in followups.recipients:
        await wake_agent(svc, run_id, recipient)
    if followups.next_seq is not None:
        await svc.scheduler.submit(
            TurnJob(run_id=run_id, agent_id=agent_id, seq=followups.next_seq)
        )
    await agents.clear_followups(svc.store, run_id, agent_id)


async def redo_followups(svc: Services, run_id: str, agent_id: str, seq: int) -> bool:
    """Redo the follow-ups of turn ``seq`` if its worker died before doing them (both
    steps are idempotent: duplicate first turns are dropped, wake-ups are claims)."""
    raw = await agents.followups(svc.store, run_id, agent_id)
    if raw is None:
        return False
    followups = FollowUps.model_validate_json(raw)
    if followups.seq != seq:
        return False
    await run_followups(svc, run_id, agent_id, followups)
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
