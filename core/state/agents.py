"""What the agent room keeps about an agent beside its saved state: the clearing of its
last saved turn's follow-ups (a field of its hash), a cheap look at its status and seq,
the release of its wake-up claim, and the creation of a designed cohort's agents, all or
none.

Owns those fields and writes (the agent's hash itself and its save belong to
:class:`core.state.store.Store`); called by ``core.agent``. May call only the Redis
client it is given through the store, and the store's own write builders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import UsageError
from core.state.store import Store
from core.state.turns import PipelineWrite
from core.types.agent import AgentState, AgentStatus
from core.types.events import RunEvent

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


async def release_wake(store: Store, run_id: str, agent_id: str) -> None:
    """Drop the agent's wake-up claim (it was woken with nothing to read)."""
    await store.redis.delete(store.keys.wake(run_id, agent_id))


@dataclass(frozen=True)
class NewAgent:
    """An agent to create: its state, the events that tell of it, and the writes that go
    with it (its bus groups)."""

    state: AgentState
    events: list[RunEvent]
    writes: Sequence[PipelineWrite] = ()


async def create_all(store: Store, run_id: str, agents: Sequence[NewAgent]) -> None:
    """Create the agents, each with a reserved slot (named after it), in one transaction:
    all of them or, when one of them exists already, none (``UsageError``)."""
    keys = [store.keys.agent(run_id, a.state.spec.id) for a in agents]
    async with store.redis.pipeline(transaction=True) as pipe:
        await pipe.watch(*keys)
        if await pipe.exists(*keys):
            await pipe.unwatch()
            raise UsageError(f"run {run_id} has some of these agents already: none created")
        pipe.multi()
        for a in agents:
            pipe.sadd(store.keys.agent_slots(run_id), a.state.spec.id)
            store.agent_create_write(a.state)(pipe)
            for write in a.writes:
                write(pipe)
            store.events.add(pipe, run_id, a.events)
        await pipe.execute()
