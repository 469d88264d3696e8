"""Learning from runs: cohorts and agents that went well are kept and reused.

Three moments count: a decision about a proposal (``approval.decide`` records it), a
rating of a result (:func:`rate`, called by whoever shows the result to people), and
the end of a run —
recorded once per run by whichever process gets to it first: the background loop of any
worker (:func:`learn_ended`), or whoever needs the record at once (:func:`learn`). The
library entry of a run is the stored cohort it reused, else the run's own cohort (saved
when it first ends, so every cohort that ran has a record; ranking lets the good ones rise).

Agents: every agent of a run that completed and that finished its own work (planned, or
created while the run went) is kept as an agent entry with the run's outcome, unless it
is a library agent already (reused by the planner, or part of a reused cohort), whose
record counts the run instead. A rating counts for the cohort and for these agents; a
rating down (thumbs down, one or two stars) forgets the agents this run was first to keep.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from core.library import EntryNotFoundError, Library
from core.library.records import rated_down
from core.state import listing
from core.state.learning_marks import LearningMarks
from core.types import AgentSpec
from core.types.agent import AgentStatus
from core.types.run import RunState, RunStatus

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)
_BATCH = 20
# How long a run is remembered as recorded (for callers waiting on another process).
_LEARNED_TTL_S = 7 * 24 * 3600
# A claim older than this belongs to a process that died while recording the run.
_CLAIM_S = 600.0


def _entry_id(run: RunState) -> str | None:
    cohort = run.cohort
    if cohort is None:
        return None
    return cohort.reused_from.entry_id if cohort.reused_from else cohort.id


async def after_decision(library: Library, run: RunState, *, approved: bool) -> None:
    """Approving or rejecting a proposal that reused entries counts for them."""
    cohort = run.cohort
    if cohort is None:
        return
    reused = [r.entry_id for r in cohort.reused]
    if cohort.reused_from is not None:
        reused.append(cohort.reused_from.entry_id)
    for entry_id in dict.fromkeys(reused):
        await library.record_decision(entry_id, approved=approved)


async def decided(svc: Services, run: RunState, *, approved: bool) -> None:
    """A person approved or rejected ``run``'s proposal: it counts for the library
    entries it reused (the library is opened only then)."""
    cohort = run.cohort
    if cohort is not None and (cohort.reused or cohort.reused_from is not None):
        await after_decision(await svc.library(), run, approved=approved)


async def after_run(
    library: Library, run: RunState, agents: list[tuple[AgentSpec, bool]] | None = None
) -> None:
    """A run ended: keep its cohort (if new) and its agents (if it went well), and count
    the outcome for them and what it reused. ``agents``: every agent of the run and
    whether it finished its work (default: the cohort's, finished if the run completed)."""
    cohort, entry_id = run.cohort, _entry_id(run)
    if cohort is None or entry_id is None or not run.status.terminal:
        return
    success = run.status is RunStatus.COMPLETED
    if cohort.reused_from is None:
        await library.save_cohort(cohort)
    await library.record_run(entry_id, success=success)
    if agents is None:
        agents = [(spec, success) for spec in cohort.agents]
    reused = {r.agent_id: r.entry_id for r in cohort.reused if r.agent_id}
    counted = [r.entry_id for r in cohort.reused if r.agent_id not in {a.id for a, _ in agents}]
    for spec, finished in agents:
        agent_entry = reused.get(spec.id, spec.id)
        if not await library.exists(agent_entry):
            if not (success and finished):
                continue
            await library.save_agent(spec, source_run=run.id)
        counted.append(agent_entry)
    for counted_id in dict.fromkeys(counted):
        try:
            await library.record_run(counted_id, success=success)
        except EntryNotFoundError:  # a reused agent deleted since
            counted.remove(counted_id)
    if counted:
        await library.store.remember_run_agents(run.id, counted, _LEARNED_TTL_S)


async def _run_agents(svc: Services, run: RunState) -> list[tuple[AgentSpec, bool]] | None:
    """Every agent the run had and whether it finished its work (None: none stored)."""
    found = await listing.run_agent_specs(svc.store, run.id)  # one round trip
    return [(spec, status is AgentStatus.FINISHED) for spec, status in found] or None


async def feedback(
    library: Library, run: RunState, *, thumbs_up: bool | None = None, stars: int | None = None
) -> None:
    """A person rated the run's result: it counts for the cohort's library entry and for
    the agents the run counted for; a rating down forgets the agents it was first to keep
    (an agent that has run elsewhere since, or was named, keeps the rating instead)."""
    entry_id = _entry_id(run)
    if entry_id is not None:
        await library.record_feedback(entry_id, thumbs_up=thumbs_up, stars=stars)
    down = rated_down(thumbs_up=thumbs_up, stars=stars)
    for agent_entry in await library.store.run_agents(run.id):
        try:
            entry = await library.get(agent_entry)
            if down and entry.source_run == run.id and entry.record.runs <= 1 and not entry.name:
                await library.delete(agent_entry)
            else:
                await library.record_feedback(agent_entry, thumbs_up=thumbs_up, stars=stars)
        except EntryNotFoundError:  # deleted meanwhile
            continue


async def rate(
    svc: Services, run: RunState, *, thumbs_up: bool | None = None, stars: int | None = None
) -> None:
    """A person rated the run's result. A rating given before any process recorded the
    run's end records it first (or waits for the process recording it), so every rated
    cohort and agent has an entry to count for."""
    library = await svc.library()
    if await _marks(svc).waiting(run.id):
        await learn(svc, run.id, library, wait_s=10)
    try:
        await feedback(library, run, thumbs_up=thumbs_up, stars=stars)
    except EntryNotFoundError:
        await learn(svc, run.id, library, wait_s=10)
        await feedback(library, run, thumbs_up=thumbs_up, stars=stars)


def _marks(svc: Services) -> LearningMarks:
    return LearningMarks(svc.store)


async def save_as(library: Library, run: RunState, name: str) -> None:
    """Keep the run's cohort under ``name``, to ask for it by name later."""
    if run.cohort is not None:
        await library.save_cohort(run.cohort, name=name, replace=True)


async def learn(
    svc: Services, run_id: str, library: Library | None = None, *, wait_s: float = 0.0
) -> bool:
    """Record the ended run's outcome unless some process already did or is doing it (a
    claim, then taking it out of the ended set). True once it is recorded: here, or by
    the process holding the claim within ``wait_s`` (for callers that need the record).
    A process that dies holding a claim leaves it to ``requeue_stale``."""
    marks = _marks(svc)
    mine = await marks.claim(run_id)
    if not mine or not await marks.take(run_id):
        if mine:  # not (or no longer) waiting to be recorded
            await marks.unclaim(run_id)
        deadline = time.monotonic() + wait_s
        while not await marks.recorded(run_id):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True
    try:
        run = await svc.store.get_run(run_id)
        # A proposal that never ran (rejected, expired) counts as a decision, not a run.
        if run.cohort is not None and run.started_at is not None:
            await after_run(library or await svc.library(), run, await _run_agents(svc, run))
    except Exception:
        await marks.put_back(run_id)  # for the next try
        raise
    await marks.done(run_id, _LEARNED_TTL_S)
    return True


async def requeue_stale(svc: Services, older_than_s: float = _CLAIM_S) -> int:
    """Put back the runs whose recording a process claimed and never finished (it died)."""
    marks = _marks(svc)
    claims = await marks.claims()
    stale = [r for r, at in claims.items() if time.time() - at > older_than_s]
    for run_id in stale:
        await marks.requeue(run_id)
    return len(stale)


async def learn_ended(svc: Services) -> int:
    """Record the outcome of runs that ended (a batch); how many this process recorded."""
    await requeue_stale(svc)
    learned = 0
    for run_id in await _marks(svc).some_waiting(_BATCH):
        try:
            learned += await learn(svc, run_id)
        except Exception:
            log.exception("recording the outcome of run %s failed; retrying later", run_id)
    return learned
