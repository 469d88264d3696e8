"""Run and agent state in Redis, with optimistic transactions (WATCH/MULTI).

An agent's state and its turn sequence number are one hash, saved in one transaction with
the turn's events and usage, so a turn delivered twice is applied once."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import WatchError

from core import telemetry
from core.errors import RunError, UsageError
from core.state.event_log import EventLog
from core.state.keys import Keys
from core.state.records import TurnStart, agent_fields, parse_head, parse_usage, set_run

# Re-exported: callers import the run-change helpers from the store they apply to.
from core.state.run_changes import RunChange, TransitionResult, chain, transition
from core.state.turn_script import COMMIT_SCRIPT, TOKEN_FIELD, Commit, script_args
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunHead, RunState, RunStatus

__all__ = ["PipelineWrite", "RunChange", "Store", "TransitionResult", "chain", "transition"]

log = logging.getLogger(__name__)
_MAX_CAS_ATTEMPTS = 20
_TOKEN_S = 600  # how long a run change's token is kept: longer than any retry takes

PipelineWrite = Callable[[Any], None]


class Store(EventLog):
    """Typed access to everything a run keeps in Redis."""

    def __init__(self, redis: Redis, keys: Keys, events_maxlen: int) -> None:
        self.redis = redis
        self.keys = keys
        self.events_maxlen = events_maxlen
        self._commit = redis.register_script(COMMIT_SCRIPT)

    # --- runs ---------------------------------------------------------------------------

    async def create_run(self, run: RunState) -> None:
        run.traceparent = run.traceparent or telemetry.new_traceparent()
        if not await self.redis.set(self.keys.run(run.id), run.model_dump_json(), nx=True):
            raise UsageError(f"run {run.id} already exists", hint="use a new run id")
        await self.redis.set(self.keys.run_head(run.id), run.head().model_dump_json())
        await self.redis.zadd(self.keys.runs_index(), {run.id: run.created_at})

    async def get_run(self, run_id: str) -> RunState:
        raw = await self.redis.get(self.keys.run(run_id))
        if raw is None:
            raise RunError(f"unknown run {run_id}")
        return RunState.model_validate_json(raw)

    async def update_run(self, run_id: str, change: RunChange) -> RunState | None:
        """Apply ``change`` atomically; returns the new state, or None if unchanged. A token
        saved with it tells a retry after a lost reply that it was applied: not again."""
        key, mark, token = self.keys.run(run_id), self.keys.run_commit(run_id), uuid.uuid4().hex
        new: RunState | None = None
        for _ in range(_MAX_CAS_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw, saved_by = await pipe.mget(key, mark)
                    if saved_by == token:  # applied already: the EXEC's reply was lost
                        return new
                    if raw is None:
                        raise RunError(f"unknown run {run_id}")
                    new, events = change(RunState.model_validate_json(raw))
                    if new is None and not events:
                        await pipe.unwatch()
                        return None
                    pipe.multi()
                    if new is not None:
                        set_run(pipe, self.keys, new)
                    self.add_events(pipe, run_id, events)
                    pipe.set(mark, token, ex=_TOKEN_S)
                    await pipe.execute()
                    return new
                except WatchError:
                    continue
        raise RunError(f"run {run_id}: too much contention updating its state")

    async def transition_run(
        self,
        run_id: str,
        to: RunStatus,
        by: str,
        note: str = "",
        events: list[RunEvent] | None = None,
    ) -> TransitionResult:
        """Move a run to ``to`` atomically; an illegal step is refused, not applied."""
        outcome: list[TransitionResult] = []

        def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
            result = transition(run, to, by, note)
            outcome[:] = [result]
            return (result.run, list(events or ())) if result.ok else (None, [])

        await self.update_run(run_id, change)
        return outcome[0]

    async def run_head(self, run_id: str) -> RunHead:
        """The run's status, pause, budget and deadline, without parsing its record."""
        head = parse_head(await self.redis.get(self.keys.run_head(run_id)))
        return head if head is not None else (await self.get_run(run_id)).head()

    async def run_usage(self, run_id: str) -> Usage:
        return parse_usage(await self.redis.hgetall(self.keys.run_usage(run_id)))

    # --- agents -------------------------------------------------------------------------

    def agent_create_write(self, state: AgentState) -> PipelineWrite:
        """The commands that create an agent, for a caller's transaction."""
        run_id, agent_id = state.run_id, state.spec.id
        fields = agent_fields(state)

        def write(pipe: Any) -> None:
            pipe.hset(self.keys.agent(run_id, agent_id), mapping=fields)
            pipe.sadd(self.keys.agents(run_id), agent_id)
            pipe.hset(self.keys.names(run_id), state.spec.name, agent_id)

        return write

    async def create_agent(
        self, state: AgentState, events: list[RunEvent], writes: Sequence[PipelineWrite] = ()
    ) -> None:
        key = self.keys.agent(state.run_id, state.spec.id)
        async with self.redis.pipeline(transaction=True) as pipe:
            await pipe.watch(key)
            if await pipe.exists(key):
                await pipe.unwatch()
                raise UsageError(f"agent {state.spec.id} already exists in run {state.run_id}")
            pipe.multi()
            self.agent_create_write(state)(pipe)
            for write in writes:
                write(pipe)
            self.add_events(pipe, state.run_id, events)
            await pipe.execute()

    async def load_spec(self, run_id: str, agent_id: str) -> tuple[AgentSpec, AgentStatus] | None:
        """An agent's spec and status, without its (possibly long) thread."""
        spec, status = await self.redis.hmget(self.keys.agent(run_id, agent_id), ["spec", "status"])
        if spec is None:
            return None
        return AgentSpec.model_validate_json(spec), AgentStatus(str(status))

    async def resolve_name(self, run_id: str, name_or_id: str) -> str | None:
        """An agent id from an id or a name."""
        if await self.redis.sismember(self.keys.agents(run_id), name_or_id):
            return name_or_id
        found: Any = await self.redis.hget(self.keys.names(run_id), name_or_id)
        return None if found is None else str(found)

    async def load_agent(self, run_id: str, agent_id: str) -> AgentState | None:
        raw = await self.redis.hget(self.keys.agent(run_id, agent_id), "state")
        return None if raw is None else AgentState.model_validate_json(raw)

    async def agent_ids(self, run_id: str) -> list[str]:
        members: Any = await self.redis.smembers(self.keys.agents(run_id))
        return sorted(members)

    async def team_members(self, run_id: str, team_id: str) -> list[str]:
        members: Any = await self.redis.smembers(self.keys.team_members(run_id, team_id))
        return sorted(members)

    async def reserve_agent_slot(self, run_id: str, slot: str, per_run: int) -> bool:
        """Take one of the run's ``per_run`` agent slots under the name ``slot`` (taking
        the same name twice takes one slot); False when the run is full."""
        slots = self.keys.agent_slots(run_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.sadd(slots, slot)
            pipe.scard(slots)
            added, taken = await pipe.execute()
        if added and taken > per_run:
            await self.redis.srem(slots, slot)
            return False
        return True

    async def commit_turn(
        self,
        state: AgentState,
        expected_seq: int,
        events: list[RunEvent],
        usage: Usage,
        run_change: RunChange | None = None,
        writes: Sequence[PipelineWrite] = (),
    ) -> Commit:
        """Save a turn: state + seq, usage, events, and an optional run change, atomically;
        ``writes`` join the transaction (bus messages, acks, new agents). ``STALE``: the
        agent's seq is no longer ``expected_seq``, nothing written. The save keeps its token
        in the agent's hash, so one sent again after a lost reply (redis-py's retry, the CAS
        after a broken WATCH) answers ``SAVED_BEFORE``: the caller does the follow-ups.
        Without a run change: one script, one round trip; with one, WATCH then MULTI/EXEC."""
        token = uuid.uuid4().hex
        if run_change is None:
            commit = await self._commit_scripted(state, expected_seq, token, events, usage, writes)
            return _noted(commit, state, expected_seq)
        run_id = state.run_id
        akey, rkey = self.keys.agent(run_id, state.spec.id), self.keys.run(run_id)
        for _ in range(_MAX_CAS_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(akey, rkey)
                    current, saved_by = await pipe.hmget(akey, ["seq", TOKEN_FIELD])
                    if current is None or int(current) != expected_seq:  # (reset unwatches)
                        commit = Commit.SAVED_BEFORE if saved_by == token else Commit.STALE
                        return _noted(commit, state, expected_seq)
                    new_run: RunState | None = None
                    run_events: list[RunEvent] = []
                    raw = await pipe.get(rkey)
                    if raw is not None:
                        new_run, run_events = run_change(RunState.model_validate_json(raw))
                    pipe.multi()
                    self._turn_writes(pipe, state, [*events, *run_events], usage, writes)
                    pipe.hset(akey, TOKEN_FIELD, token)
                    if new_run is not None:
                        set_run(pipe, self.keys, new_run)
                    await pipe.execute()
                    return Commit.SAVED
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
    ) -> Commit:
        # The pipeline only records the commands; the script checks seq and runs them.
        recorder = self.redis.pipeline(transaction=False)
        self._turn_writes(recorder, state, events, usage, writes)
        argv = script_args(expected_seq, token, recorder.command_stack)
        await recorder.reset()
        akey = self.keys.agent(state.run_id, state.spec.id)
        return Commit(int(await self._commit(keys=[akey], args=argv)))

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
        self.add_events(pipe, run_id, events)

    async def turn_start(self, run_id: str, agent_id: str, seq: int) -> TurnStart:
        """One round trip: the agent's state, the run's head, this turn's delivery count,
        the run's usage so far, and the model's answer an earlier delivery saved."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hget(self.keys.agent(run_id, agent_id), "state")
            pipe.get(self.keys.run_head(run_id))
            pipe.hincrby(self.keys.deliveries(run_id), f"{agent_id}:{seq}", 1)
            pipe.hget(self.keys.deliveries(run_id), f"{agent_id}:{seq}:failed")
            pipe.hgetall(self.keys.run_usage(run_id))
            pipe.hget(self.keys.responses(run_id), self.keys.response_field(agent_id, seq))
            raw_state, raw_head, deliveries, failed, raw_usage, saved = await pipe.execute()
        head = parse_head(raw_head) or await self.run_head(run_id)
        state = None if raw_state is None else AgentState.model_validate_json(raw_state)
        usage = parse_usage(raw_usage)
        return TurnStart(state, head, int(deliveries), int(failed or 0), usage, saved)

    async def count_delivery(
        self, run_id: str, agent_id: str, seq: int, *, failed: bool = False
    ) -> int:
        """How many times this turn has been started, this time included (``failed``: how
        many of its deliveries raised)."""
        field = f"{agent_id}:{seq}" + (":failed" if failed else "")
        return int(await self.redis.hincrby(self.keys.deliveries(run_id), field, 1))


def _noted(commit: Commit, state: AgentState, seq: int) -> Commit:
    """``commit``, logged when it is a save whose reply was lost (its follow-ups go on)."""
    if commit is Commit.SAVED_BEFORE:
        log.warning("%s's turn %d was saved, though its reply was lost", state.spec.name, seq)
    return commit
