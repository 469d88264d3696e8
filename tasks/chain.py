"""Turn chaining: the turns a turn schedules run in the task that ran it, one at a time.

Most turns end by scheduling the same agent's next turn, or another agent's of the same
run (a member's result wakes its lead, a lead's first member starts). Publishing it costs a
broker round trip, a ledger entry and Celery's per-task work, and the next turn then waits
for a free slot — all to land in a worker that is as good as this one. So while a task
runs a turn, the scheduler hands the turns it schedules for the same run back to the task
instead: the agent's own next turn (:attr:`Chain.next`), and the others
(:attr:`Chain.deferred`). When the turn has returned, the task runs the agent's next turn,
or else the first of the others, and publishes the rest (bounded by ``celery.chain_turns``
and ``celery.chain_s``, well under the visibility timeout).

Nothing is lost if the worker dies mid-chain. Each turn handed back is in the turn ledger
(:mod:`tasks.ledger`) before ``submit`` returns — the turn's save counts its follow-ups as
scheduled from then on: the agent's next turn held by this worker, the others queued (as a
publish records them) until they are published or held in turn. What this worker holds is
renewed with the rest of what it runs and settled only when it has run, so another worker
publishes it again once the dead worker's lease lapsed, and a queued entry the broker never
got is published again by the ledger's sweep. A chain that stops early gives its held turn
back to the broker (queued in the ledger, then published). The task's own message,
redelivered by the broker after its visibility timeout, is an old turn and is dropped.
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
    # The agent's next turn (its ledger task id and job), held by this worker.
    next: tuple[str, TurnJob] | None = None
    # Other turns of the run the running turn scheduled, queued in the ledger, unpublished.
    deferred: list[tuple[str, TurnJob]] = field(default_factory=list)

    def open(self) -> bool:
        return self.turns_left > 0 and time.monotonic() < self.deadline

    def accepts(self, job: TurnJob) -> bool:
        """``job`` is handed back to this chain's task (not published now)."""
        return job.kind == "turn" and job.run_id == self.run_id and self.open()

    def takes_as_next(self, job: TurnJob) -> bool:
        """``job`` is the agent's next turn, to be held for this task at once."""
        return self.next is None and job.agent_id == self.agent_id

    def pick(self) -> tuple[str, TurnJob] | None:
        """With no next turn of the agent's: the first other turn, run next (its agent's
        turns chain on from it); the rest stay in :attr:`deferred`, to be published."""
        if not self.deferred or not self.open():
            return None
        chosen = self.deferred.pop(0)
        self.agent_id = chosen[1].agent_id
        return chosen


CURRENT: ContextVar[Chain | None] = ContextVar("caramba_turn_chain", default=None)
