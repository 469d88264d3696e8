"""The turn ledger's moves on a worker's event loop: hold what a task runs, settle what
ended, both in one script, and no hop to a thread (``tasks.chain``). Most of a chain's
moves ride on the turn's own save (:class:`Ride`): the save script settles the chain's
ended turns and holds the turn the save schedules first, in the same round trip.

The sets are the turn ledger's (``core.state.ledger``: queued, scored by when due; held,
scored by a lease deadline); scores are integer milliseconds of the Redis server's clock.
A move first settles (the entries leave both sets), then holds (the entries leave the
queued set and are held until ``lease_s`` from now): an entry named in both ends held.

Part of the state room, the only room that speaks Redis commands (``core.state``); it
may call the Redis client and ``core.state.keys``."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from core.state.client import Client
from core.state.keys import Keys

# KEYS: queued, held. ARGV: lease ms, how many to settle, the settled..., the held...
_MOVE = """local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
local settled = tonumber(ARGV[2])
for i = 3, 2 + settled do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
end
for i = 3 + settled, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], now + ARGV[1], ARGV[i])
end"""


class _Wired(Protocol):
    """What a process's Services hold (``core.process.wiring``): its Redis client."""

    @property
    def redis(self) -> Client: ...


class LedgerMoves:
    """Hold and settle turn ledger entries from an event loop; every call one round trip."""

    @classmethod
    def of(cls, svc: _Wired, key_prefix: str) -> LedgerMoves:
        """The moves through the process's own client (``svc``: its Services)."""
        return cls(svc.redis, key_prefix)

    def __init__(self, redis: Client, key_prefix: str) -> None:
        keys = Keys(key_prefix)
        self._keys = [keys.celery_ledger(), keys.celery_ledger_held()]
        self._move = redis.register_script(_MOVE)

    async def move(
        self, *, settle: Sequence[str] = (), hold: Sequence[str] = (), lease_s: float = 0.0
    ) -> None:
        """Settle the entries ``settle`` (their turns ended) and hold ``hold`` for
        ``lease_s`` from now, atomically. Nothing to do costs nothing."""
        if not settle and not hold:
            return
        args: list[str | int] = [round(lease_s * 1000), len(settle), *settle, *hold]
        await self._move(keys=self._keys, args=args)


# The save script's part (``core.state.turn_script``): ``ride`` is the counted list of
# :meth:`Ride.argv` (empty: no ride). Settled on any save, held only on one applied now,
# with the first of its follow-ups (``"<agent>:<seq>"``); an agent id JSON would escape
# is not held here (the caller's own move holds it). Returns the entry held, or false.
RIDE_LUA = """
local function ride_settle(ride)
  for k = 7, #ride do
    redis.call('ZREM', ride[1], ride[k])
    redis.call('ZREM', ride[2], ride[k])
  end
end
local function ride_hold(ride, job)
  if #ride == 0 or not job then return false end
  local agent, seq = string.match(job, '^([%w_.:%-]+):(%d+)$')
  if not agent then return false end
  local member = ride[4] .. agent .. ride[5] .. seq .. ride[6]
  local t = redis.call('TIME')
  redis.call('ZREM', ride[1], member)
  redis.call('ZADD', ride[2], t[1] * 1000 + math.floor(t[2] / 1000) + ride[3], member)
  return member
end
"""


@dataclass(frozen=True)
class Ride:
    """A ledger move riding on a turn's save script: settle ``settle`` (ended turns of the
    chain) on any save; on a save applied now, hold the entry of the first turn it
    schedules until ``lease_ms`` from now. That entry is ``member[0] + agent id +
    member[1] + seq + member[2]`` (the ledger's own spelling of the turn, ``tasks.ledger``)."""

    keys: tuple[str, str]  # queued, held
    lease_ms: int
    member: tuple[str, str, str]
    settle: tuple[str, ...] = ()

    def argv(self) -> list[Any]:
        """The script's ``ride`` list, counted."""
        items = [*self.keys, self.lease_ms, *self.member, *self.settle]
        return [len(items), *items]


class Rider(Protocol):
    """Who offers a ride to the save of a turn it runs (``tasks.chain``)."""

    def ride(self, run_id: str) -> Ride | None:
        """The ride for a save of a turn of ``run_id`` about to be sent (or none)."""
        ...

    def landed(self, ride: Ride, held: str) -> None:
        """The save applied ``ride``: its entries settled, ``held`` held."""
        ...


# The rider of the turn running in this context: set by the task that runs it, read by
# the turn's save (``core.state.turns``), like the chain itself (``tasks.chain.CURRENT``).
RIDER: ContextVar[Rider | None] = ContextVar("caramba_ledger_rider", default=None)

# The start script's part (``core.state.turn_start``): ARGV from ``i`` is a counted list
# (empty: nothing to hold) of the ledger's keys (queued, held), the lease's ms and the
# entries to hold until then — before the turn's lease is tried: the task holds its
# message's turn whether or not this delivery gets to run it.
HOLD_LUA = """
local function ledger_hold(i)
  local n = tonumber(ARGV[i] or '0') or 0
  if n < 4 then return end
  local t = redis.call('TIME')
  local due = t[1] * 1000 + math.floor(t[2] / 1000) + ARGV[i + 3]
  for k = i + 4, i + n do
    redis.call('ZREM', ARGV[i + 1], ARGV[k])
    redis.call('ZADD', ARGV[i + 2], due, ARGV[k])
  end
end
"""


@dataclass
class StartHold:
    """A task's hold of its message's turn (``member``, the turn ``job``: run, agent, seq),
    riding on that turn's start script instead of a script of its own (``tasks.chain``):
    the first start of that very turn in this context sends it, once."""

    keys: tuple[str, str]  # queued, held
    lease_ms: int
    job: tuple[str, str, int]
    member: str
    sent: bool = False

    def argv(self, run_id: str, agent_id: str, seq: int) -> list[Any]:
        """The start script's counted list for a start of that turn (empty for any other,
        or once sent)."""
        if self.sent or (run_id, agent_id, seq) != self.job:
            return []
        self.sent = True
        items = [*self.keys, self.lease_ms, self.member]
        return [len(items), *items]


# The hold waiting for the start of the task's turn in this context (``tasks.chain``).
START_HOLD: ContextVar[StartHold | None] = ContextVar("caramba_start_hold", default=None)


def start_hold_argv(run_id: str, agent_id: str, seq: int) -> list[Any]:
    """The start script's hold list for a start of this turn (``core.state.turns``)."""
    hold = START_HOLD.get()
    return [] if hold is None else hold.argv(run_id, agent_id, seq)
