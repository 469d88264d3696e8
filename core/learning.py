"""Learning from runs: cohorts people approved and that went well are kept and reused.

Called by whoever drives a run (the console, the chat adapters) at three moments: a
decision about a proposal, the end of a run, and feedback on its result. The library
entry of a run is the stored cohort it reused, else the run's own cohort (saved when it
first ends, so every cohort that ran has a record; ranking lets the good ones rise).
"""

from __future__ import annotations

from core.library import Library
from core.types.run import RunState, RunStatus


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


async def after_run(library: Library, run: RunState) -> None:
    """A run ended: keep its cohort (if new) and count the outcome for it and its reuses."""
    cohort, entry_id = run.cohort, _entry_id(run)
    if cohort is None or entry_id is None or not run.status.terminal:
        return
    success = run.status is RunStatus.COMPLETED
    if cohort.reused_from is None:
        await library.save_cohort(cohort)
    await library.record_run(entry_id, success=success)
    for reused in cohort.reused:
        await library.record_run(reused.entry_id, success=success)


async def feedback(
    library: Library, run: RunState, *, thumbs_up: bool | None = None, stars: int | None = None
) -> None:
    """A person rated the run's result: it counts for the cohort's library entry."""
    entry_id = _entry_id(run)
    if entry_id is not None:
        await library.record_feedback(entry_id, thumbs_up=thumbs_up, stars=stars)


async def save_as(library: Library, run: RunState, name: str) -> None:
    """Keep the run's cohort under ``name``, to ask for it by name later."""
    if run.cohort is not None:
        await library.save_cohort(run.cohort, name=name, replace=True)
