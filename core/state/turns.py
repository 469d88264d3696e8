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
from typing import TYPE_CHECKING, Any

from redis.exceptions import WatchError

from core.errors import RunError
from core.state.records import TurnStart, agent_fields, parse_head, parse_usage, set_run
from core.state.run_changes import RunChange
from core.state.turn_script import COMMIT_SCRIPT, TOKEN_FIELD, Commit, script_args
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunState

if TYPE_CHECKING:
    from core.state.store import Store

log = logging.getLogger(__name__)
_MAX_CAS_ATTEMPTS = 20

# A command for a caller's transaction (bus messages, acks, new agents, intents).
PipelineWrite = Callable[[Any], None]


class Turns:
    """Start and save turns, on the store's Redis client and keys."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.redis = store.redis
        self.keys = store.keys
        self._commit = store.redis.register_script(COMMIT_SCRIPT)

    async def commit(
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
        self.store.events.add(pipe, run_id, events)

    async def start(self, run_id: str, agent_id: str, seq: int) -> TurnStart:
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
        head = parse_head(raw_head) or await self.store.run_head(run_id)
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
