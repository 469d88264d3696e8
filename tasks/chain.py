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

Nothing is lost if the worker dies mid-chain: every turn of the chain is an entry of the
turn ledger (:mod:`tasks.ledger`) held by this worker, renewed with the rest of what it
runs, from before the turn that schedules it returns until after it has run. A chained
turn is held by the save of the turn that schedules it, in the save's own script (the
chain rides on it: :class:`ChainRider`, :class:`~core.state.ledger_moves.Ride`), and the
chain's turns that ended are settled in that same script — no round trip of its own.
When that turn is the agent's own next one and the only one the save schedules, the save
also starts it (its lease, its delivery counted, its mail read: ``core.state.turn_ahead``),
so that it runs with no start round trip; a start never run is let go when the chain ends.
A save that could not hold it (one with a run change, one sent again after its reply
was lost, an agent id the script does not spell as the ledger does) leaves it to
``submit``, which holds it in one script of its own
(:class:`~core.state.ledger_moves.LedgerMoves`) with the ended ones settled; either way
it is held before ``submit`` returns (so the turn that scheduled it may count it as
scheduled). The last ones are settled after the chain ended, with the worker's next
renewal of its leases (``CeleryScheduler.settle_later``). An ended turn whose entry is
settled late costs nothing if the worker dies meanwhile: published again, it is dropped
as already applied. A chain that stops early gives its stashed turn back to the
broker (queued in the ledger, then published); so does a chain whose task timed out, for
the chained turn it was running, and a turn that raised after its save held a turn it
never scheduled. The task's own message, redelivered by the broker after its visibility
timeout, is an old turn and is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.config_sections import CelerySettings
from core.scheduler.base import TurnJob, TurnOutcome
from core.state.ledger_moves import RIDER, START_HOLD, Ride
from core.state.turn_ahead import AHEAD, AheadOffer
from tasks.ledger import TurnLedger

if TYPE_CHECKING:
    from tasks.scheduler import CeleryScheduler

log = logging.getLogger(__name__)


@dataclass
class Chain:
    """The chain of one task: whose turns it may run next, and how many more."""

    run_id: str
    agent_id: str  # whose turn the task runs now
    turns_left: int
    deadline: float
    # The next turn (its ledger task id and job), handed back instead of published.
    next: tuple[str, TurnJob] | None = None
    # Ledger entries of the chain's turns that ended, still held (settled with the next
    # hold, or when the chain ends).
    done: list[str] = field(default_factory=list)
    # The task id of the next chained turn (the same whichever script holds it).
    task: str = field(default_factory=lambda: str(uuid.uuid4()))
    # The entry a turn's save held (its first follow-up), until the turn schedules it.
    held: str | None = None

    def open_for(self, run_id: str) -> bool:
        """May a turn of ``run_id`` still become the next one?"""
        return (
            self.next is None
            and self.held is None
            and run_id == self.run_id
            and self.turns_left > 0
            and time.monotonic() < self.deadline
        )

    def accepts(self, job: TurnJob) -> bool:
        return job.kind == "turn" and self.open_for(job.run_id)

    def take(self, job: TurnJob) -> None:
        """``job`` is the next turn, held under :attr:`task`."""
        self.next, self.held = (self.task, job), None


@dataclass
class ChainRider:
    """The chain's ride on its turns' saves (:class:`~core.state.ledger_moves.Rider`): a
    save that may schedule the next turn holds it and settles the ended ones."""

    chain: Chain
    scheduler: CeleryScheduler

    def ride(self, run_id: str) -> Ride | None:
        chain = self.chain
        if not chain.open_for(run_id):
            return None
        return self.scheduler.ride(chain.task, run_id, chain.done)

    def landed(self, ride: Ride, held: str) -> None:
        self.scheduler.rode(ride, held)
        del self.chain.done[: len(ride.settle)]
        self.chain.held = held


CURRENT: ContextVar[Chain | None] = ContextVar("caramba_turn_chain", default=None)

Handle = Callable[[TurnJob], Awaitable[TurnOutcome]]


def chain_span_s(limits: CelerySettings) -> float:
    """How long a task may go on chaining: well inside the turn time-out and the
    visibility timeout (the task's message stays unacknowledged for the whole chain)."""
    return min(limits.chain_s, limits.turn_timeout_s / 3, limits.visibility_timeout_s / 3)


async def timed(work: Coroutine[Any, Any, TurnOutcome], limit_s: float) -> TurnOutcome:
    """``work`` (a task's chain), cancelled after ``limit_s`` seconds (:class:`TimeoutError`).
    Awaited in this task (``asyncio.timeout``), not in one more (``wait_for`` makes a task
    of it): one task per turn in flight, not two."""
    async with asyncio.timeout(limit_s):
        return await work


async def run_chain(
    scheduler: CeleryScheduler,
    handle: Handle,
    job: TurnJob,
    task_id: str,
    *,
    already_held: bool = False,
) -> TurnOutcome:
    """Run message ``task_id``'s turn ``job``, then the turns it chains (see the module
    docstring), holding each in the ledger while it runs and settling it once it ran.

    ``already_held``: ``job`` is held by this process already, in the ledger and in the
    scheduler's holdings (a local turn: :mod:`tasks.local_turns`), so it is not held again.
    If ``job`` itself raises, its entry stays held: the task's retry (or give-up) moves it.
    """
    limits = scheduler.settings.celery
    # The task's turn is held by its own start script (the lease and the hold in one round
    # trip); a job that starts no turn, or a scheduler without a loop client, holds it now.
    start_hold = None
    if not already_held:
        start_hold = scheduler.start_hold(task_id, job)
        if start_hold is None:
            await scheduler.hold(task_id, job)
    holding = START_HOLD.set(start_hold)
    deadline = time.monotonic() + chain_span_s(limits)
    chain = Chain(job.run_id, job.agent_id, limits.chain_turns, deadline)
    token = CURRENT.set(chain)
    rider = RIDER.set(ChainRider(chain, scheduler))
    offer = AheadOffer()
    ahead = AHEAD.set(offer)
    current: tuple[str, TurnJob] | None = (task_id, job)
    ended = False
    try:
        outcome = await handle(job)
        ended = True
        while chain.next is not None and current is not None:
            chain.done.append(scheduler.member(*current))
            current, chain.next, ended = chain.next, None, False
            chain.task = str(uuid.uuid4())
            chain.turns_left -= 1
            chain.agent_id = current[1].agent_id
            try:
                outcome = await handle(current[1])
            except Exception:
                log.exception("chained turn %s failed; handing it to the broker", current[1])
                await scheduler.hand_over(*current)
                current = None
            else:
                ended = True
    finally:
        START_HOLD.reset(holding)
        AHEAD.reset(ahead)
        RIDER.reset(rider)
        CURRENT.reset(token)
        # A next turn a save started (its lease taken), never run here: let go before it
        # goes back to the broker, so that its next delivery need not wait for a lapse.
        await offer.discard()
        if chain.next is not None:  # stashed, then the chain ended (error, time-out)
            await scheduler.hand_over(*chain.next)
        if chain.held is not None:  # held by a save; its turn raised before scheduling it
            await scheduler.hand_over(*TurnLedger.parse(chain.held))
        if not ended and current is not None and current[0] != task_id:
            await scheduler.hand_over(*current)  # cancelled mid-turn (the task timed out)
        last = [scheduler.member(*current)] if ended and current is not None else []
        scheduler.settle_later([*chain.done, *last])
    return outcome
