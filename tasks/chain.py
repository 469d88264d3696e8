"""Turn chaining: the turns a turn schedules run in the task that ran it, one at a time.

Most turns end by scheduling the same agent's next turn, or another agent's of the same
run (a member's result wakes its lead). Publishing it costs a broker round trip, a ledger
entry and Celery's per-task work, and the next turn then waits for a free slot — all to
land in a worker that is as good as this one. So while a task runs a turn, the scheduler
keeps the turns it schedules for the same run back (:attr:`Chain.deferred`), and when the
turn has returned, the task runs one of them next — the agent's own next turn if there is
one, else the first other one — and publishes the rest (bounded by ``celery.chain_turns``
and ``celery.chain_s``, well under the visibility timeout).

Nothing is lost if the worker dies mid-chain: a chained turn is recorded in the turn
ledger (:mod:`tasks.ledger`) as held by this worker, renewed with the rest of what it
runs and settled only when it has run, so another worker publishes it again once the
dead worker's lease lapsed. A turn kept back and not yet recorded is one of its turn's
saved follow-ups: the late copy of that turn (its own entry lapses too) schedules the
follow-ups that never started (``core.agent.wake.redo_followups``). A chain that stops
early gives its stashed turn back to the broker (queued in the ledger, then published).
The task's own message, redelivered by the broker after its visibility timeout, is an
old turn and is dropped.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from core.scheduler.base import TurnJob


@dataclass
class Chain:
    """The chain of one task: whose turns it may run next, and how many more."""

    run_id: str
    agent_id: str
    turns_left: int
    deadline: float
    # The next turn (its ledger task id and job), handed back instead of published.
    next: tuple[str, TurnJob] | None = None
    # Turns of the run scheduled by the turn running now, kept back until it returns.
    deferred: list[TurnJob] = field(default_factory=list)

    def open(self) -> bool:
        return self.turns_left > 0 and time.monotonic() < self.deadline

    def accepts(self, job: TurnJob) -> bool:
        """``job`` is kept back for this chain (not published now)."""
        return job.kind == "turn" and job.run_id == self.run_id and self.open()

    def pick(self) -> TurnJob | None:
        """The turn to run next, out of those kept back (the rest are to be published):
        the agent's own next turn, else the first one scheduled."""
        if not self.deferred or not self.open():
            return None
        own = [j for j in self.deferred if j.agent_id == self.agent_id]
        chosen = own[0] if own else self.deferred[0]
        self.deferred.remove(chosen)
        self.agent_id = chosen.agent_id
        return chosen


CURRENT: ContextVar[Chain | None] = ContextVar("caramba_turn_chain", default=None)
