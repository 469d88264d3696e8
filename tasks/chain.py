"""Turn chaining: the first turn a turn schedules in its run runs next in the same task.

Most turns end by scheduling another turn of their run: the agent's own next turn, a new
agent's first turn, or the turn a message wakes (a member's result wakes its lead).
Publishing it costs a broker round trip, a ledger entry and Celery's per-task work, and
the next turn then waits for a free slot — all to land in a worker that is as good as
this one. So while a task runs a turn, the scheduler hands the first turn of the same run
that it schedules back to the task instead (bounded by ``celery.chain_turns`` and
``celery.chain_s``, well under the visibility timeout); the turns it schedules after that
one are published as usual, and run beside it. (A turn schedules its new agents' first
turns and wake-ups before its own next turn, so a lead that starts its members runs the
first member next and publishes its own next turn: either way one runs here, the others
in other slots, at once.)

Nothing is lost if the worker dies mid-chain: a chained turn is recorded in the turn
ledger (:mod:`tasks.ledger`) as held by this worker, renewed with the rest of what it
runs and settled only when it has run, so another worker publishes it again once the
dead worker's lease lapsed. A chain that stops early gives its stashed turn back to the
broker (queued in the ledger, then published). The task's own message, redelivered by
the broker after its visibility timeout, is an old turn and is dropped.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass

from core.scheduler.base import TurnJob


@dataclass
class Chain:
    """The chain of one task: whose turns it may run next, and how many more."""

    run_id: str
    agent_id: str  # whose turn the task runs now
    turns_left: int
    deadline: float
    # The next turn (its ledger task id and job), handed back instead of published.
    next: tuple[str, TurnJob] | None = None

    def accepts(self, job: TurnJob) -> bool:
        return (
            self.next is None
            and job.kind == "turn"
            and job.run_id == self.run_id
            and self.turns_left > 0
            and time.monotonic() < self.deadline
        )


CURRENT: ContextVar[Chain | None] = ContextVar("caramba_turn_chain", default=None)
