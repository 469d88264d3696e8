"""Reading many runs or agents at once, for pages that list them (the run inspector's
runs list and run page): the newest runs with their usage, and every agent of a run, each
in one round trip.

Owns no keys of its own (the run's record, its usage hash and the agents' hashes belong
to :class:`core.state.store.Store`); read-only. Called by ``bots.web``; may call only the
Redis client of the store it is given."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from core.state.saved_states import saved_states
from core.state.store import Store
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import Usage
from core.types.run import RunState


async def newest_runs(store: Store, limit: int) -> list[tuple[RunState, Usage]]:
    """The newest ``limit`` runs with their usage, newest first (a run whose record is
    gone is left out)."""
    ids: Any = await store.redis.zrevrange(store.keys.runs_index(), 0, limit - 1)
    if not ids:
        return []
    async with store.redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.get(store.keys.run(run_id))
            pipe.hgetall(store.keys.run_usage(run_id))
        replies: list[Any] = await pipe.execute()
    pairs = zip(replies[::2], replies[1::2], strict=True)
    return [(RunState.model_validate_json(raw), _usage(used)) for raw, used in pairs if raw]


async def run_agents(store: Store, run_id: str) -> list[AgentState]:
    """Every agent of the run, in one round trip (after the list of its agents)."""
    return [AgentState.model_validate_json(state) for state in await _agent_states(store, run_id)]


async def run_agent_specs(store: Store, run_id: str) -> list[tuple[AgentSpec, AgentStatus]]:
    """Every agent of the run as its spec and status, without its thread, in one round
    trip (after the list of its agents)."""
    return [
        (AgentSpec.model_validate_json(spec), AgentStatus(str(status)))
        for spec, status in await _agent_fields(store, run_id, "spec", "status")
        if spec is not None
    ]


class _Model(BaseModel):
    model: str | None = None


class _Cost(BaseModel):
    """Of an agent's saved state, what its cost is counted by (the rest, its thread
    above all, is skipped by the parser, never built)."""

    spec: _Model
    usage: Usage = Usage()


async def run_agent_costs(store: Store, run_id: str) -> list[tuple[str | None, float]]:
    """Every agent of the run as its model (None: the default) and what it cost, in one
    round trip (after the list of its agents), without building the agents' states."""
    costs = [_Cost.model_validate_json(state) for state in await _agent_states(store, run_id)]
    return [(cost.spec.model, cost.usage.cost_usd) for cost in costs]


async def _agent_states(store: Store, run_id: str) -> list[str]:
    """The saved state (JSON) of every agent of the run that has one, in one round trip
    (after the list of its agents)."""
    ids = await store.agent_ids(run_id)
    return [state for state in await saved_states(store.redis, store.keys, run_id, ids) if state]


async def _agent_fields(store: Store, run_id: str, *fields: str) -> list[list[Any]]:
    """``fields`` of every agent of the run's hash, in one round trip (after the list of
    its agents)."""
    ids = await store.agent_ids(run_id)
    async with store.redis.pipeline(transaction=False) as pipe:
        for agent_id in ids:
            pipe.hmget(store.keys.agent(run_id, agent_id), list(fields))
        return list(await pipe.execute())


def _usage(raw: dict[str, str]) -> Usage:
    """A usage hash; empty fields count as nothing."""
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens", 0) or 0),
        completion_tokens=int(raw.get("completion_tokens", 0) or 0),
        cost_usd=float(raw.get("cost_usd", 0) or 0),
    )
