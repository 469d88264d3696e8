"""Runs and agents in Redis: a run's record, head and usage; an agent's hash, its name and
its slot; a turn's start (one read) and its save (one script); a run's change (a read and
one script, ``core.state.run_update``).

An agent's state and its turn sequence number are one hash, saved in one transaction with
the turn's events and usage, so a turn delivered twice is applied once. Every multi-key
write is one MULTI/EXEC or one script.

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client and ``core.state``'s other modules. The store is the state room's
front door: it owns ``events`` (``core.state.event_log``), ``turns``, ``timers``,
``intents``, ``watchdog`` and ``keeper`` (one module each), on the same client and keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from core import telemetry
from core.errors import RunError, UsageError
from core.state import snapshot
from core.state.durable_writes import replicated
from core.state.event_log import EventLog
from core.state.intents import IntentQueue
from core.state.keeper_channel import KeeperChannel
from core.state.keys import Keys
from core.state.piped import Pipe
from core.state.records import TurnStart, agent_fields, parse_head, parse_usage, state_text

# Re-exported: callers import the run-change helpers from the store they apply to.
from core.state.run_changes import RunChange, TransitionResult, chain, transition
from core.state.run_create import RunCreator
from core.state.run_update import RunUpdater
from core.state.saved_states import saved_states
from core.state.timers import TimerSet
from core.state.turn_cas import TotalsChange
from core.state.turn_script import AfterSave
from core.state.turns import PipelineWrite, Saved, Turns
from core.state.watchdog import WatchdogState
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunHead, RunState, RunStatus

__all__ = [
    "AfterSave",
    "PipelineWrite",
    "RunChange",
    "Saved",
    "Store",
    "TotalsChange",
    "TransitionResult",
    "chain",
    "transition",
]


class Store:
    """Typed access to the runs and agents a deployment keeps in Redis."""

    def __init__(
        self, redis: Redis, keys: Keys, events_maxlen: int, *, pipe_scripts: bool = True
    ) -> None:
        self.redis = redis
        self.keys = keys
        # The turn's start and save scripts, several per write (core.state.piped), unless
        # redis.pipe_scripts turns it off.
        self.pipe = Pipe(redis) if pipe_scripts and Pipe.usable(redis) else None
        self.events = EventLog(redis, keys, events_maxlen)
        self.turns = Turns(self)
        # The state rooms of the effects and the watchdog, on the same client and keys.
        self.timers = TimerSet(redis, keys)
        self.intents = IntentQueue(redis, keys, self.events)
        self.watchdog = WatchdogState(redis, keys)
        self.keeper = KeeperChannel(redis, keys)
        self._create = RunCreator(redis, keys, events_maxlen)
        self._update = RunUpdater(redis, keys, self.add_events)

    async def aclose(self) -> None:
        """Close the Redis client (the process's, shared by every state object)."""
        if self.pipe is not None:
            await self.pipe.aclose()
        await self.redis.aclose()

    async def ping(self) -> None:
        """Raise when Redis does not answer (a process checks it once as it starts)."""
        await self.redis.ping()

    async def dump_keys(self, pattern: str) -> snapshot.Saved:
        """The keys matching ``pattern`` that do not expire (``core.state.snapshot``)."""
        return await snapshot.dump(self.redis, pattern)

    async def restore_keys(self, saved: snapshot.Saved) -> int:
        return await snapshot.restore(self.redis, saved)

    # --- events (the event log's; kept here for the callers that write through the store)

    async def emit(self, *events: RunEvent) -> None:
        await self.events.emit(*events)

    def add_events(self, pipe: object, run_id: str, events: list[RunEvent]) -> None:
        self.events.add(pipe, run_id, events)

    async def read_events(
        self, run_id: str, after: str = "0-0", count: int = 100, block_ms: int | None = None
    ) -> list[tuple[str, RunEvent]]:
        return await self.events.read(run_id, after, count, block_ms)

    # --- runs ---------------------------------------------------------------------------

    async def create_run(
        self, run: RunState, events: Sequence[RunEvent] = (), *, durable: bool = False
    ) -> None:
        """Record a new run with its first ``events`` (``core.state.run_create``; never
        its ``RunFinished``); ``durable`` as in ``update_run``."""
        run.traceparent = run.traceparent or telemetry.new_traceparent()
        if not await self._create(run, events):
            raise UsageError(f"run {run.id} already exists", hint="use a new run id")
        if durable:
            await replicated(self.redis, self.keys)

    async def get_run(self, run_id: str) -> RunState:
        raw = await self.redis.get(self.keys.run(run_id))
        if raw is None:
            raise RunError(f"unknown run {run_id}")
        return RunState.model_validate_json(raw)

    async def update_run(
        self, run_id: str, change: RunChange, *, durable: bool = False
    ) -> RunState | None:
        """Apply ``change`` atomically; returns the new state, or None if unchanged. A token
        saved with it tells a retry after a lost reply that it was applied: not again.
        ``durable`` (a person's decision): once applied, on ``redis.replicas_to_ack``
        replicas before it returns (``core.state.durable_writes``; nothing when 0)."""
        return await self._update(run_id, change, durable)

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
        fields, text = agent_fields(state, created=True), state_text(state)

        def write(pipe: Any) -> None:
            pipe.hset(self.keys.agent(run_id, agent_id), mapping=fields)
            pipe.set(self.keys.agent_state(run_id, agent_id), text)
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
        (raw,) = await saved_states(self.redis, self.keys, run_id, (agent_id,))
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

    # --- turns (``store.turns``'s; kept here for the callers that save through the store)

    async def turn_start(
        self,
        run_id: str,
        agent_id: str,
        seq: int,
        lease: tuple[str, int],
        drain_max: int,
        *,
        redo: bool = True,
    ) -> TurnStart | None:
        return await self.turns.start(run_id, agent_id, seq, lease, drain_max, redo=redo)

    async def commit_turn(
        self,
        state: AgentState,
        expected_seq: int,
        events: list[RunEvent],
        usage: Usage,
        run_change: RunChange | TotalsChange | None = None,
        writes: Sequence[PipelineWrite] = (),
        after: AfterSave | None = None,
    ) -> Saved:
        return await self.turns.commit(
            state, expected_seq, events, usage, run_change, writes, after
        )

    def hold_created(self, states: Sequence[AgentState]) -> None:
        """A save created these agents: their first turns here need not read their states."""
        self.turns.hold_created(states)

    async def count_delivery(
        self, run_id: str, agent_id: str, seq: int, *, failed: bool = False
    ) -> int:
        """How many times this turn has been started, this time included (``failed``: how
        many of its deliveries raised)."""
        field = f"{agent_id}:{seq}" + (":failed" if failed else "")
        return int(await self.redis.hincrby(self.keys.deliveries(run_id), field, 1))
