"""Run state changes: the lifecycle step, and composing changes for one transaction.

Pure functions on ``RunState``, no Redis: part of the state room (``core.state``) because
the store applies them inside its transactions; may call ``core.types`` only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.types.events import RunEvent
from core.types.run import ALLOWED, RunState, RunStatus, Transition

# Given the current run, return its new state (or None for no change) and extra events.
RunChange = Callable[[RunState], tuple[RunState | None, list[RunEvent]]]


@dataclass(frozen=True)
class TransitionResult:
    ok: bool
    run: RunState
    reason: str = ""


def transition(run: RunState, to: RunStatus, by: str, note: str = "") -> TransitionResult:
    """Apply one lifecycle step in memory, or say why it is not allowed."""
    if to not in ALLOWED[run.status]:
        return TransitionResult(
            False, run, f"this run {run.status.words}; it cannot be {to.value} now"
        )
    # A shallow copy: every nested value of a run is immutable (frozen models, tuples)
    # but its two lists, copied here so the old and the new run share neither.
    step = Transition(from_status=run.status, to_status=to, by=by, note=note)
    new = run.model_copy(update={"history": [*run.history, step], "files": list(run.files)})
    new.status = to
    return TransitionResult(True, new)


def chain(*changes: RunChange | None) -> RunChange | None:
    """Several run changes applied in order as one (each sees the previous one's result)."""
    steps = [c for c in changes if c is not None]
    if not steps:
        return None

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        current, changed, events = run, False, []
        for step in steps:
            new, more = step(current)
            events += more
            if new is not None:
                current, changed = new, True
        return (current if changed else None), events

    return change
