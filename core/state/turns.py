"""A turn's reads and writes: its start (one script: the lease taken, the agent's state,
the run's head, the delivery count, the usage, a saved model answer and the agent's mail,
``core.state.turn_start``) and its save (one script, the state staged just before it,
``core.state.staged``: state and seq, usage, events, bus writes, the wake-up claims, the
follow-ups' record, the lease's release, ``core.state.turn_script``; on a worker's chain
the turn ledger's move, ``ledger_moves.Ride``; with a run change, guarded by the run's
record as read, ``core.state.turn_cas``, without the ledger's move). Part of the state
room (``core.state``), the only room that speaks Redis commands: it may call the Redis
client, the modules named here, ``keys``/``records``/``leases`` and the store that owns
it (``store.turns``) for the run's head and event log."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.state.durable_writes import replicated
from core.state.kept import Kept, RunRead
from core.state.leases import release_lease
from core.state.ledger_moves import RIDER, Ride, start_hold_argv
from core.state.piped import PipedScript
from core.state.records import TurnStart, agent_fields, parse_head, parse_usage
from core.state.run_changes import RunChange
from core.state.staged import stage
from core.state.turn_ahead import AHEAD, started_by_save
from core.state.turn_cas import READ_SCRIPT, TotalsChange, commit_with_run_change
from core.state.turn_script import (
    COMMIT_SCRIPT,
    AfterSave,
    Clears,
    Commit,
    Saved,
    clear_args,
    parse_jobs,
    script_args,
)
from core.state.turn_start import (
    CREATED,
    HELD,
    START_SCRIPT,
    StartReply,
    parse_start,
    start_args,
)
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunHead, RunStatus

if TYPE_CHECKING:
    from core.state.store import Store

log = logging.getLogger(__name__)
# At most this many done follow-up records ride on one script.
_MAX_CLEARS = 64

# A command for a caller's transaction (bus messages, acks, new agents, intents).
PipelineWrite = Callable[[Any], None]


class Turns:
    """Start and save turns, on the store's Redis client and keys."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.redis = store.redis
        self.keys = store.keys
        # On the store's pipe: several turns' scripts in one write (core.state.piped).
        self.commit_script = PipedScript(store.redis, store.pipe, COMMIT_SCRIPT)
        self.read_for_change = PipedScript(store.redis, store.pipe, READ_SCRIPT)  # (turn_cas)
        self._start = PipedScript(store.redis, store.pipe, START_SCRIPT)
        # Follow-up records done by this process, cleared by its next script.
        self._clears: Clears = []
        # The states its saves wrote and runs' records its starts read (``core.state.kept``).
        self.kept = Kept()

    async def commit(
        self,
        state: AgentState,
        expected_seq: int,
        events: list[RunEvent],
        usage: Usage,
        run_change: RunChange | TotalsChange | None = None,
        writes: Sequence[PipelineWrite] = (),
        after: AfterSave | None = None,
    ) -> Saved:
        """Save a turn: state + seq, usage, events, and an optional run change, atomically;
        ``writes`` join the transaction (bus messages, acks, new agents), and ``after``
        says what follows in the same script (wake-up claims, the follow-ups' record, the
        lease's release: ``core.state.turn_script``). ``STALE``: the agent's seq is no
        longer ``expected_seq``, nothing written. The save keeps its token in the agent's
        hash, so one sent again after a lost reply (redis-py's retry, the CAS after a
        broken WATCH) answers ``SAVED_BEFORE`` with the turns to schedule. Without a run
        change: one script, one round trip; with one, the same when the root's turn start read
        the run, else two (``core.state.turn_cas``: a :class:`TotalsChange` is given the
        run's usage with this turn's)."""
        token = os.urandom(16).hex()  # (as uuid4().hex, without its object)
        if run_change is None:
            saved = await self._commit_scripted(
                state, expected_seq, token, events, usage, writes, after
            )
        else:
            saved = await commit_with_run_change(
                self, state, expected_seq, token, events, usage, run_change, writes, after
            )
        if saved.saved:  # redis.replicas_to_ack > 0: on that many replicas (a WAIT)
            await replicated(self.redis, self.keys)
        if saved.saved and not state.status.terminal and not started_by_save(state):
            self._hold(state, token)
        return _noted(saved, state, expected_seq)

    def held(self, key: str, *, take: bool = False) -> tuple[str, AgentState] | None:
        """The save token and state this process holds for agent ``key`` (taken out with
        ``take``: its turn was started, ``core.state.turn_ahead_wake``)."""
        return self.kept.held(key, take=take)

    def hold_created(self, states: Sequence[AgentState]) -> None:
        """Keep the states of the agents a save just created, for their first turns (those
        that start here are not sent them back: ``turn_start.CREATED``)."""
        for state in states:
            self._hold(state, CREATED)

    def _hold(self, state: AgentState, token: str) -> None:
        """Keep the state this save wrote, for the agent's next start (``core.state.kept``)."""
        self.kept.hold(self.keys.agent(state.run_id, state.spec.id), token, state)

    async def _commit_scripted(
        self,
        state: AgentState,
        expected_seq: int,
        token: str,
        events: list[RunEvent],
        usage: Usage,
        writes: Sequence[PipelineWrite],
        after: AfterSave | None,
    ) -> Saved:
        # The pipeline only records the commands; the script checks seq and runs them.
        recorder = self.redis.pipeline(transaction=False)
        self.turn_writes(recorder, state, events, usage, writes)
        # A worker's chain rides its ledger move on the save (``core.state.ledger_moves``).
        rider = RIDER.get()
        ride = rider.ride(state.run_id) if rider is not None else None
        # ... and the start of the turn it schedules, should it run next (``turn_ahead``).
        offer = AHEAD.get()
        start = offer.argv(self, state, token, after, ride) if offer is not None else []
        argv, before = self.script_argv(state, expected_seq, token, recorder, after, ride, start)
        akey = self.keys.agent(state.run_id, state.spec.id)
        at = time.monotonic()
        reply = await self.commit_script(
            keys=[akey, self.lease_key(after)], args=argv, before=before
        )
        if ride is not None and rider is not None and len(reply) > 2 and reply[2]:
            rider.landed(ride, str(reply[2]))
        if offer is not None and start:
            await offer.landed(self, state, token, start, at, reply)
        return Saved(Commit.of(reply), parse_jobs(reply[1], expected_seq))

    def script_argv(
        self,
        state: AgentState,
        seq: int,
        token: str,
        recorder: Any,
        after: AfterSave | None,
        ride: Ride | None = None,
        ahead: Sequence[Any] = (),
        guard: Sequence[str] = (),
    ) -> tuple[list[Any], tuple[Any, ...]]:
        """The save script's ARGV, and the SET staging the state before it (``staged``)."""
        run_id, clears = state.run_id, self._take_clears()
        staged, before = stage(self.keys.agent(run_id, state.spec.id), token, state)
        prefixes = (self.keys.agent(run_id, ""), self.keys.wake(run_id, ""), state.spec.id)
        parts = (seq, token, recorder.command_stack, after, prefixes, clears, ride, ahead, guard)
        argv = script_args(*parts, staged, state.status.terminal)
        recorder.command_stack.clear()
        return argv, before

    def lease_key(self, after: AfterSave | None) -> str:
        # A key must be named even with no lease to release: one nobody writes.
        return after.lease[0] if after is not None and after.lease else self.keys.prefix

    async def release(self, after: AfterSave | None) -> None:
        if after is not None and after.lease is not None:
            key, token = after.lease
            await release_lease(self.redis, key, token)

    def turn_writes(
        self,
        pipe: Any,
        state: AgentState,
        events: list[RunEvent],
        usage: Usage,
        writes: Sequence[PipelineWrite],
    ) -> None:
        run_id = state.run_id
        pipe.hset(self.keys.agent(run_id, state.spec.id), mapping=agent_fields(state))
        for write in writes:
            write(pipe)
        ukey = self.keys.run_usage(run_id)
        if usage.prompt_tokens:
            pipe.hincrby(ukey, "prompt_tokens", usage.prompt_tokens)
        if usage.completion_tokens:
            pipe.hincrby(ukey, "completion_tokens", usage.completion_tokens)
        if usage.cost_usd:
            pipe.hincrbyfloat(ukey, "cost_usd", usage.cost_usd)
        self.store.events.add(pipe, run_id, events)

    async def start(
        self,
        run_id: str,
        agent_id: str,
        seq: int,
        lease: tuple[str, int],
        drain_max: int,
        *,
        redo: bool = True,
    ) -> TurnStart | None:
        """One round trip (``core.state.turn_start``): take the turn's lease (``lease``:
        this delivery's token and how long, in ms) and read the turn with the agent's mail;
        None when another delivery holds the lease. ``redo``: a late copy gets the
        follow-ups never started of the turn it copies."""
        keys, clears = self.keys, self._take_clears()
        field = keys.response_field(agent_id, seq)
        # Taken out: the turn changes it from now on (held again when it is saved).
        held = self.kept.held(keys.agent(run_id, agent_id), take=True)
        streams = (keys.inbox(run_id, agent_id), keys.broadcast(run_id), keys.team(run_id, ""))
        argv = start_args(
            seq,
            lease[0],
            lease[1],
            field,
            agent_id,
            streams,
            drain_max,
            keys.agent(run_id, ""),
            redo,
            clear_args(clears),
            held[0] if held is not None else "",
        )
        argv += start_hold_argv(run_id, agent_id, seq)  # a Celery task's (tasks.chain)
        script_keys = self.start_keys(run_id, agent_id, seq)
        try:
            reply = parse_start(await self._start(keys=script_keys, args=argv))
        except BaseException:
            self._clears.extend(clears)
            raise
        if reply is None:
            return None
        return await self.started(run_id, reply, held)

    def start_keys(self, run_id: str, agent_id: str, seq: int) -> list[str]:
        keys = self.keys
        return [
            keys.agent(run_id, agent_id),
            keys.turn_lease(run_id, agent_id, seq),
            keys.run_head(run_id),
            keys.deliveries(run_id),
            keys.run_usage(run_id),
            keys.responses(run_id),
        ]

    async def started(
        self, run_id: str, reply: StartReply, held: tuple[str, AgentState] | None
    ) -> TurnStart:
        """The start script's reply read (``held``: the state this process saved last)."""
        head = parse_head(reply.head)
        if head is None and reply.state is None:
            # Neither the agent nor its run's head: a run never created, or whose creation
            # a failover lost. The turn is dropped as one of an unknown agent, not raised
            # (and retried to its limit) reading a run record that is not there either.
            head = RunHead(id=run_id, status=RunStatus.FAILED)
        elif head is None:
            head = await self.store.run_head(run_id)
        if reply.state == HELD and held is not None:
            state: AgentState | None = held[1]
        else:
            state = None if reply.state is None else AgentState.model_validate_json(reply.state)
        usage = parse_usage(reply.usage)
        if reply.run is not None:
            self.kept.keep_run(run_id, RunRead(reply.run, reply.head, reply.usage))
        return TurnStart(state, head, reply.deliveries, reply.failures, usage, reply.saved, reply)

    def done(self, run_id: str, agent_id: str, seq: int) -> None:
        """The follow-ups of turn ``seq`` were scheduled: its record goes with this
        process's next script."""
        self._clears.append((self.keys.agent(run_id, agent_id), seq))

    def _take_clears(self) -> Clears:
        clears, self._clears = self._clears[:_MAX_CLEARS], self._clears[_MAX_CLEARS:]
        return clears


def _noted(saved: Saved, state: AgentState, seq: int) -> Saved:
    """``saved``, logged when it is a save whose reply was lost (its follow-ups go on)."""
    if saved.commit is Commit.SAVED_BEFORE:
        log.warning("%s's turn %d was saved, though its reply was lost", state.spec.name, seq)
    return saved
