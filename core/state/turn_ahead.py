"""A turn started by the save of the turn before it: most turns are an agent going straight
on (its next turn after a tool call), and on a worker's chain (``tasks.chain``) that turn
runs next in the same process. Its save script, which already holds it in the turn ledger
for the chain (``core.state.ledger_moves.Ride``), then also runs its start script
(``core.state.turn_start``: the lease taken, the delivery counted, the head, usage and
mail read), so that the turn starts with no round trip of its own.

Only on offer (:data:`AHEAD`, set by the chain) and only when the save schedules nothing
but the agent's own next turn — or nothing but the turn of the one agent it woke (a
member's end waking its parent: ``WAKE_LUA``), which the chain runs next when the save
held it. Its lease is taken by the save: the turn that takes the
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

Part of the state room (``core.state``); may call the Redis client it is given,
``core.state.records``/``turn_script``/``turn_start`` and the :class:`Turns` that saves."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.state.records import TurnStart
from core.state.turn_script import AfterSave, Commit, parse_jobs
from core.state.turn_start import parse_start, start_args
from core.types.agent import AgentState

if TYPE_CHECKING:
    from core.state.turns import Turns

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
        # The woken agent's state this process held, for the start a save makes of its turn.
        self.held: tuple[str, AgentState] | None = None

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

    def started(self, state: AgentState) -> bool:
        """Whether the save of ``state`` started the agent's next turn here."""
        return self.ahead is not None and self.ahead.start.state is state

    def argv(
        self, turns: Turns, state: AgentState, token: str, after: AfterSave | None, ride: Any
    ) -> list[Any]:
        """The save script's ``ahead`` list for a save on the chain (``ride``) that
        schedules the agent's own next turn, or that wakes one agent and schedules nothing
        else (its turn held for the chain: ``WAKE_LUA``); none otherwise: ``[]``."""
        return self.start_argv(turns, state, token, after) if ride is not None else []

    def start_argv(
        self, turns: Turns, state: AgentState, token: str, after: AfterSave | None
    ) -> list[Any]:
        """The ``ahead`` list of a save that schedules the agent's own next turn, or the
        ``wake`` list of one that wakes one agent and schedules nothing else; ``[]``."""
        if after is None or after.ahead is None:
            return []
        if after.next_job:
            return ahead_argv(turns, state, token, after.ahead)
        return self.wake_argv(turns, state.run_id, after, after.ahead)

    def wake_argv(
        self, turns: Turns, run_id: str, after: AfterSave, lease: tuple[int, int]
    ) -> list[Any]:
        """The save script's ``wake`` list (``WAKE_LUA``) for a save that wakes one agent and
        schedules nothing else (``lease``: the lease's ms and the mail's cap); ``[]`` for
        any other save."""
        if len(after.wake) != 1 or after.jobs or after.next_job:
            return []
        keys, agent_id = turns.keys, after.wake[0]
        self.held = turns.held(keys.agent(run_id, agent_id))
        return [
            "wake",
            keys.turn_lease(run_id, "", 0)[: -len(":0")],
            keys.run_head(run_id),
            keys.deliveries(run_id),
            keys.run_usage(run_id),
            keys.responses(run_id),
            os.urandom(16).hex(),
            lease[0],
            keys.inbox(run_id, ""),
            keys.broadcast(run_id),
            keys.team(run_id, ""),
            lease[1],
            keys.agent(run_id, ""),
            self.held[0] if self.held is not None else "",
            agent_id,  # (not read by the script: the agent the start is for)
        ]

    async def landed(
        self, turns: Turns, state: AgentState, token: str, start: list[Any], at: float, reply: Any
    ) -> None:
        """The save script's ``reply`` for a save sent with ``start`` (:meth:`argv`)."""
        if start[0] == "wake":
            await self._woke(turns, state, start, at, reply)
        elif len(reply) > 3:
            await keep_start(turns, self, state, token, start, at, reply[3])
        elif int(reply[0]) == Commit.SAVED_BEFORE:
            # Sent again after its reply was lost: its first run may have started the next
            # turn, which then starts as usual.
            await let_go(turns.redis, start[0], start[6], (start[2], start[8]))

    async def _woke(
        self, turns: Turns, state: AgentState, start: list[Any], at: float, reply: Any
    ) -> None:
        """Keep the start the save made of the turn it woke (if it made one), or let go the
        one its first run may have made when its reply was lost."""
        held, self.held = self.held, None
        record = str(reply[1]) if len(reply) > 1 and reply[1] else ""
        jobs = parse_jobs(record, int(record.partition("|")[0] or -1))
        if len(jobs) != 1 or jobs[0][0] != start[-1]:
            return
        run_id, (agent_id, seq) = state.run_id, jobs[0]
        key, counted = turns.keys.turn_lease(run_id, agent_id, seq), (start[3], f"{agent_id}:{seq}")
        if int(reply[0]) == Commit.SAVED_BEFORE:
            await let_go(turns.redis, key, start[6], counted)
            return
        raw = parse_start(reply[3]) if len(reply) > 3 and reply[3] else None
        if raw is None:  # not started here (its lease held by another delivery, or not woken)
            return
        turns.held(turns.keys.agent(run_id, agent_id), take=True)
        started = await turns.started(run_id, raw, held)
        ahead = Ahead(
            run_id, agent_id, seq, key, start[6], int(start[7]), at, started, turns.redis, counted
        )
        self.keep(ahead)


# The offer of the chain running in this context (``tasks.chain``), read by a turn's save
# (``core.state.turns``) and by the next turn's lease (``core.agent.lease``).
AHEAD: ContextVar[AheadOffer | None] = ContextVar("caramba_turn_ahead", default=None)


def ahead_args(keys: Sequence[str], start: Sequence[Any]) -> list[Any]:
    """The save script's ``ahead`` list: the next turn's start script keys but the agent's
    (its lease, the run's head, deliveries, usage, saved answers), then its first ten
    arguments (``turn_start.start_args``: seq to the agent key prefix). A save applied now
    that holds the agent's own next turn for the chain, and schedules nothing else, runs
    that turn's start script too, the state held being this save's
    (``core.state.turn_ahead``)."""
    return [*keys[1:], *start[:10]]


def started_by_save(state: AgentState) -> bool:
    """Whether the save of ``state`` started the agent's next turn (then held by that turn
    alone, not kept for the agent's next start)."""
    offer = AHEAD.get()
    return offer is not None and offer.started(state)


def ahead_argv(turns: Turns, state: AgentState, token: str, ahead: tuple[int, int]) -> list[Any]:
    """The start of the agent's next turn (``state.seq``) for the save script, under a new
    lease token (``ahead``: the lease's ms and the mail's cap)."""
    keys, run_id, agent_id = turns.keys, state.run_id, state.spec.id
    streams = (keys.inbox(run_id, agent_id), keys.broadcast(run_id), keys.team(run_id, ""))
    start = start_args(
        state.seq,
        os.urandom(16).hex(),
        ahead[0],
        keys.response_field(agent_id, state.seq),
        agent_id,
        streams,
        ahead[1],
        keys.agent(run_id, ""),
        False,
        [],
        token,
    )
    return ahead_args(turns.start_keys(run_id, agent_id, state.seq), start)


async def keep_start(
    turns: Turns,
    offer: AheadOffer,
    state: AgentState,
    token: str,
    start: list[Any],
    at: float,
    raw: Any,
) -> None:
    """Keep the next turn's start the save ``token`` made (``start``: its arguments, from
    :func:`ahead_argv`), for that turn to take (``core.agent.lease``). Its state is the one
    saved: held by that turn alone."""
    reply = parse_start(raw)
    if reply is None:  # its lease was held by another delivery: it starts as usual
        return
    started = await turns.started(state.run_id, reply, (token, state))
    lease_key, lease_token, ms, counted = start[0], start[6], int(start[7]), (start[2], start[8])
    offer.keep(
        Ahead(
            state.run_id,
            state.spec.id,
            state.seq,
            lease_key,
            lease_token,
            ms,
            at,
            started,
            turns.redis,
            counted,
        )
    )
