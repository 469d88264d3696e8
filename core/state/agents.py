"""What the agent room keeps about an agent beside its saved state: the clearing of its
last saved turn's follow-ups (a field of its hash), a cheap look at its status and seq,
the release of its wake-up claim, and the creation of a designed cohort's agents, all or
none.

Owns those fields and writes (the agent's hash itself and its save belong to
:class:`core.state.store.Store`); called by ``core.agent``. May call only the Redis
client it is given through the store, the store's own write builders and
``core.state.recorded``."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import RunError, UsageError
from core.state.recorded import CREATE_SCRIPT, recorded_args
from core.state.store import Store
from core.state.turns import PipelineWrite
from core.types.agent import AgentState, AgentStatus
from core.types.events import RunEvent
from core.types.run import RunState

_FOLLOWUPS = "followups"


async def clear_followups(store: Store, run_id: str, agent_id: str) -> None:
    """Forget its last saved turn's follow-ups (a record of the older, JSON form, redone;
    the save and start scripts keep and clear the job lists, ``core.state.turn_script``)."""
    await store.redis.hdel(store.keys.agent(run_id, agent_id), _FOLLOWUPS)


async def status_and_seq(
    store: Store, run_id: str, agent_id: str
) -> tuple[AgentStatus, int] | None:
    """The agent's status and turn number, without its state; None: no such agent."""
    fields: Any = await store.redis.hmget(store.keys.agent(run_id, agent_id), ["status", "seq"])
    if fields[0] is None:
        return None
    return AgentStatus(fields[0]), int(fields[1])


async def release_wake(
    store: Store, run_id: str, agent_id: str, own: Sequence[tuple[str, str]] = ()
) -> None:
    """Drop the agent's wake-up claim (it was woken with nothing to read), acknowledging
    the entries (stream, id) it read that were only its own posts on its team's topic or
    the broadcast: never shown to it, nothing is lost; left pending, they would wake it
    again at once, again and again, until its turn was quarantined."""
    async with store.redis.pipeline(transaction=False) as pipe:
        for stream, entry_id in own:
            pipe.xack(stream, agent_id, entry_id)
        pipe.delete(store.keys.wake(run_id, agent_id))
        await pipe.execute()


async def release_waiting(store: Store, run_id: str, agent_id: str, seq: int) -> None:
    """Drop the agent's wake-up claim, its turn ``seq`` woken (by mail) while a call of it
    waits for a person's approval: this delivery is counted as a wait, apart from the
    deaths (``core.agent.quarantine``), in the same round trip."""
    keys = store.keys
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.delete(keys.wake(run_id, agent_id))
        pipe.hincrby(keys.deliveries(run_id), f"{agent_id}:{seq}:waited", 1)
        await pipe.execute()


@dataclass(frozen=True)
class NewAgent:
    """An agent to create: its state, the events that tell of it, and the writes that go
    with it (its bus groups)."""

    state: AgentState
    events: list[RunEvent]
    writes: Sequence[PipelineWrite] = ()


async def create_all(store: Store, run_id: str, agents: Sequence[NewAgent]) -> None:
    """Create the agents, each with a reserved slot (named after it), in one script (one
    round trip, ``core.state.recorded``): all of them or, when one of them exists
    already, none (``UsageError``)."""
    keys = [store.keys.agent(run_id, a.state.spec.id) for a in agents]
    pipe = store.redis.pipeline(transaction=False)  # (records: sent by one script)
    for a in agents:
        pipe.sadd(store.keys.agent_slots(run_id), a.state.spec.id)
        store.agent_create_write(a.state)(pipe)
        for write in a.writes:
            write(pipe)
        store.events.add(pipe, run_id, a.events)
    script = _CREATE_SCRIPTS.get(store)
    if script is None:
        script = _CREATE_SCRIPTS[store] = store.redis.register_script(CREATE_SCRIPT)
    if not int(await script(keys=keys, args=recorded_args(pipe.command_stack))):
        raise UsageError(f"run {run_id} has some of these agents already: none created")


# KEYS: the run's agents, their names, the run's record, its agent slots. ARGV: the new
# agent's name, its slot ('' to take none), the run's cap. Reply: name taken (1/0), the
# run's record, the slot's outcome (1 taken or not asked for, 0 the run is full).
_ROOM = """
local named = redis.call('HGET', KEYS[2], ARGV[1])
local taken = redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 or (named and named ~= '')
local run = redis.call('GET', KEYS[3])
if taken or ARGV[2] == '' then return {taken and 1 or 0, run, 1} end
local added = redis.call('SADD', KEYS[4], ARGV[2])
if added == 1 and redis.call('SCARD', KEYS[4]) > tonumber(ARGV[3]) then
  redis.call('SREM', KEYS[4], ARGV[2])
  return {0, run, 0}
end
return {0, run, 1}
"""


_ROOM_SCRIPTS: weakref.WeakKeyDictionary[Store, Any] = weakref.WeakKeyDictionary()
_CREATE_SCRIPTS: weakref.WeakKeyDictionary[Store, Any] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Room:
    """What a new agent's creation found: whether its name is taken, the run's record,
    and whether its slot was taken (False: the run is full)."""

    name_taken: bool
    run: RunState
    slot_taken: bool


async def room_for(store: Store, run_id: str, name: str, slot: str, per_run: int) -> Room:
    """In one round trip: whether an agent of the run has ``name`` as its name or id, the
    run's record, and, when the name is free and ``slot`` is given, one of the run's
    ``per_run`` agent slots taken under that name (as ``Store.reserve_agent_slot``).
    ``RunError`` when there is no such run (as ``Store.get_run``)."""
    k = store.keys
    keys = [k.agents(run_id), k.names(run_id), k.run(run_id), k.agent_slots(run_id)]
    script = _ROOM_SCRIPTS.get(store)
    if script is None:  # registered once per store (its SHA1 computed once)
        script = _ROOM_SCRIPTS[store] = store.redis.register_script(_ROOM)
    taken, run, slot_ok = await script(keys=keys, args=[name, slot, per_run])
    if run is None:
        raise RunError(f"unknown run {run_id}")
    return Room(bool(int(taken)), RunState.model_validate_json(run), bool(int(slot_ok)))
