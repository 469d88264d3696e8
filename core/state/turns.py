"""A turn's reads and writes: its start (the agent's state, the run's head, the delivery
count, the usage and a saved model answer, in one round trip) and its save (the agent's
state and seq, usage, events, bus writes and an optional run change, atomically).

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client, ``core.state.keys``/``records``/``turn_script`` and the store that
owns it (``store.turns``) for the run's head and event log."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from redis.exceptions import WatchError

from core.errors import RunError
from core.state.leases import release_lease
from core.state.records import TurnStart, agent_fields, parse_head, parse_usage, set_run
from core.state.run_changes import RunChange
from core.state.turn_script import (
    COMMIT_SCRIPT,
    TOKEN_FIELD,
    AfterSave,
    Clears,
    Commit,
    clear_args,
    parse_jobs,
    script_args,
)
from core.state.turn_start import START_SCRIPT, parse_start, start_args
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunState

if TYPE_CHECKING:
    from core.state.store import Store

log = logging.getLogger(__name__)
_MAX_CAS_ATTEMPTS = 20
# At most this many done follow-up records ride on one script.
_MAX_CLEARS = 64

# A command for a caller's transaction (bus messages, acks, new agents, intents).
PipelineWrite = Callable[[Any], None]


class Saved(NamedTuple):
    """What a save came to, and the turns it asks to schedule (its follow-ups: new agents'
    first turns, claimed wake-ups, its own next turn), in order."""

    commit: Commit
    jobs: list[tuple[str, int]]

    @property
    def saved(self) -> bool:
        return self.commit.saved


class Turns:
    """Start and save turns, on the store's Redis client and keys."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.redis = store.redis
        self.keys = store.keys
        self._commit = store.redis.register_script(COMMIT_SCRIPT)
        self._start = store.redis.register_script(START_SCRIPT)
        # Follow-up records done by this process, cleared by its next script.
        self._clears: Clears = []

    async def commit(
        self,
        state: AgentState,
        expected_seq: int,
        events: list[RunEvent],
        usage: Usage,
        run_change: RunChange | None = None,
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
        change: one script, one round trip; with one, WATCH, a read, then the script in
        MULTI/EXEC."""
        token = uuid.uuid4().hex
        if run_change is None:
            saved = await self._commit_scripted(
                state, expected_seq, token, events, usage, writes, after
            )
            return _noted(saved, state, expected_seq)
        run_id = state.run_id
        akey, rkey = self.keys.agent(run_id, state.spec.id), self.keys.run(run_id)
        for _ in range(_MAX_CAS_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(akey, rkey)
                    current, saved_by, record = await pipe.hmget(
                        akey, ["seq", TOKEN_FIELD, "followups"]
                    )
                    if current is None or int(current) != expected_seq:  # (reset unwatches)
                        if saved_by == token:
                            jobs = parse_jobs(record, expected_seq)
                            return _noted(Saved(Commit.SAVED_BEFORE, jobs), state, expected_seq)
                        await self._release(after)
                        return Saved(Commit.STALE, [])
                    new_run: RunState | None = None
                    run_events: list[RunEvent] = []
                    raw = await pipe.get(rkey)
                    if raw is not None:
                        new_run, run_events = run_change(RunState.model_validate_json(raw))
                    recorder = self.redis.pipeline(transaction=False)
                    self._turn_writes(recorder, state, [*events, *run_events], usage, writes)
                    if new_run is not None:
                        set_run(recorder, self.keys, new_run)
                    argv = self._args(state, expected_seq, token, recorder, after)
                    pipe.multi()
                    # The script's text, not its digest: a pipeline would first ask whether
                    # it is loaded (one more round trip). The WATCH keeps seq as read.
                    pipe.eval(COMMIT_SCRIPT, 2, akey, self._lease_key(after), *argv)
                    (reply,) = await pipe.execute()
                    return Saved(Commit.of(reply), parse_jobs(reply[1], expected_seq))
                except WatchError:
                    continue  # the run key moved (another agent); re-check and retry
        raise RunError(f"run {run_id}: too much contention saving agent {state.spec.id}")

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
        self._turn_writes(recorder, state, events, usage, writes)
        argv = self._args(state, expected_seq, token, recorder, after)
        akey = self.keys.agent(state.run_id, state.spec.id)
        reply = await self._commit(keys=[akey, self._lease_key(after)], args=argv)
        return Saved(Commit.of(reply), parse_jobs(reply[1], expected_seq))

    def _args(
        self, state: AgentState, seq: int, token: str, recorder: Any, after: AfterSave | None
    ) -> list[Any]:
        run_id, clears = state.run_id, self._take_clears()
        prefixes = (self.keys.agent(run_id, ""), self.keys.wake(run_id, ""), state.spec.id)
        argv = script_args(seq, token, recorder.command_stack, after, prefixes, clears)
        recorder.command_stack.clear()
        return argv

    def _lease_key(self, after: AfterSave | None) -> str:
        # A key must be named even with no lease to release: one nobody writes.
        return after.lease[0] if after is not None and after.lease else self.keys.prefix

    async def _release(self, after: AfterSave | None) -> None:
        if after is not None and after.lease is not None:
            key, token = after.lease
            await release_lease(self.redis, key, token)

    def _turn_writes(
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
        )
        script_keys = [
            keys.agent(run_id, agent_id),
            keys.turn_lease(run_id, agent_id, seq),
            keys.run_head(run_id),
            keys.deliveries(run_id),
            keys.run_usage(run_id),
            keys.responses(run_id),
        ]
        try:
            reply = parse_start(await self._start(keys=script_keys, args=argv))
        except BaseException:
            self._clears.extend(clears)
            raise
        if reply is None:
            return None
        head = parse_head(reply.head) or await self.store.run_head(run_id)
        state = None if reply.state is None else AgentState.model_validate_json(reply.state)
        usage = parse_usage(reply.usage)
        return TurnStart(state, head, reply.deliveries, reply.failures, usage, reply.saved, reply)

    def done(self, run_id: str, agent_id: str, seq: int) -> None:
        """The follow-ups of turn ``seq`` were scheduled: its record goes with this
        process's next script."""
        self._clears.append((self.keys.agent(run_id, agent_id), seq))

    def _take_clears(self) -> Clears:
        clears, self._clears = self._clears[:_MAX_CLEARS], self._clears[_MAX_CLEARS:]
        return clears

    async def count_delivery(
        self, run_id: str, agent_id: str, seq: int, *, failed: bool = False
    ) -> int:
        """How many times this turn has been started, this time included (``failed``: how
        many of its deliveries raised)."""
        field = f"{agent_id}:{seq}" + (":failed" if failed else "")
        return int(await self.redis.hincrby(self.keys.deliveries(run_id), field, 1))


def _noted(saved: Saved, state: AgentState, seq: int) -> Saved:
    """``saved``, logged when it is a save whose reply was lost (its follow-ups go on)."""
    if saved.commit is Commit.SAVED_BEFORE:
        log.warning("%s's turn %d was saved, though its reply was lost", state.spec.name, seq)
    return saved
