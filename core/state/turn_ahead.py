"""A turn started by the save of the turn before it: most turns are an agent going straight
on (its next turn after a tool call), and on a worker's chain (``tasks.chain``) that turn
runs next in the same process. Its save script, which already holds it in the turn ledger
for the chain (``core.state.ledger_moves.Ride``), then also runs its start script
(``core.state.turn_start``: the lease taken, the delivery counted, the head, usage and
mail read), so that the turn starts with no round trip of its own.

Only on offer (:data:`AHEAD`, set by the chain) and only when the save schedules nothing
but the agent's own next turn. Its lease is taken by the save: the turn that takes the
start (``core.agent.lease``) holds it from there and renews it as any other; one that
waited too long (:meth:`Ahead.fresh`) lets it go and starts as usual. A start never taken
(the chain stopped, the turn that saved raised before scheduling it) has its lease
released by the chain (:meth:`AheadOffer.discard`), its delivery uncounted; the worker's
death leaves the lease to lapse (``LEASE_S``) and the delivery counted as one that died,
as for any turn whose worker died under it.

Mail read this early is the mail of the moment of the save, the same as a start script a
moment later could have read: what comes after it is read by the turn after (a running
agent's mail never wakes it; one that goes on to wait is woken by it: the save script's
``unread``). Entries read are pending for the agent until a save acknowledges them: a
turn that never runs leaves them to the next delivery's start, as a worker dying after
its start does.

Part of the state room (``core.state``); may call the Redis client it is given and
``core.state.records``."""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from core.state.records import TurnStart

# KEYS: the turn's lease, the run's deliveries. ARGV: the lease's token, "<agent>:<seq>".
# Still held under the token: no delivery but this start's ran the turn, which never ran:
# its lease goes and its delivery is not counted (no attempt: nothing to quarantine for).
_LET_GO = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HINCRBY', KEYS[2], ARGV[2], -1)
  return 1
end
return 0
"""


@dataclass(frozen=True)
class Ahead:
    """Turn ``seq`` of ``agent_id`` in ``run_id``, started by its predecessor's save under
    lease ``key`` (``token``, ``ms`` long from ``at``, a ``time.monotonic()`` taken before
    the save was sent)."""

    run_id: str
    agent_id: str
    seq: int
    key: str
    token: str
    ms: int
    at: float
    start: TurnStart
    redis: Any
    # The run's deliveries hash and the turn's field in it (its start counted it).
    counted: tuple[str, str]

    def fresh(self, now: float | None = None) -> bool:
        """Surely still held: a third of its time passed at most (the turn's renewal is
        due by then)."""
        now = time.monotonic() if now is None else now
        return now - self.at < self.ms / 3000

    async def release(self) -> None:
        """The turn does not run under this start: :func:`let_go`."""
        await let_go(self.redis, self.key, self.token, self.counted)


async def let_go(redis: Any, key: str, token: str, counted: tuple[str, str]) -> None:
    """A start made under lease ``key`` (``token``; ``counted``: its deliveries hash and
    field) whose turn does not run under it: the lease goes, and the delivery count with
    it while the lease was still this start's (best effort: it lapses otherwise, the start
    counted as a delivery that died)."""
    with contextlib.suppress(Exception):
        await redis.eval(_LET_GO, 2, key, counted[0], token, counted[1])


class AheadOffer:
    """A chain's offer to the saves of its turns (:data:`AHEAD`): the start a save made of
    the next turn is kept here until that turn takes it."""

    def __init__(self) -> None:
        self.ahead: Ahead | None = None

    def take(self, run_id: str, agent_id: str, seq: int) -> Ahead | None:
        """The start made for this turn (none for any other: that one is let go by
        :meth:`discard`)."""
        ahead = self.ahead
        if ahead is None or (ahead.run_id, ahead.agent_id, ahead.seq) != (run_id, agent_id, seq):
            return None
        self.ahead = None
        return ahead

    def keep(self, ahead: Ahead) -> None:
        self.ahead = ahead

    async def discard(self) -> None:
        """A start no turn took: its lease goes (best effort: it lapses otherwise)."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            await ahead.release()


# The offer of the chain running in this context (``tasks.chain``), read by a turn's save
# (``core.state.turns``) and by the next turn's lease (``core.agent.lease``).
AHEAD: ContextVar[AheadOffer | None] = ContextVar("caramba_turn_ahead", default=None)
