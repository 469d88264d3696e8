"""An agent's state has a key of its own, written by a save through a staged SET (the
state never passes into the save script: ``core.state.staged``), against the real Redis:
nothing staged is left behind, a save whose staged state is gone applies nothing, a stale
save drops its own, and an agent saved before that key existed (its state in its hash) is
read from there and moved by its next save."""

from __future__ import annotations

from typing import Any

import pytest
from redis.exceptions import ResponseError

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.state import listing, staged, turns
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import Usage
from tests.conftest import make_settings

pytestmark = pytest.mark.integration

TOOLS = ("calculate", "finish")


def _model() -> ScriptedModel:
    return ScriptedModel().script(
        "O",
        Reply(calls=(call("calculate", {"expression": "6*7"}),)),
        Reply(calls=(call("calculate", {"expression": "7*8"}),)),
        Reply(calls=(call("finish", {"result": "56"}),)),
    )


async def _started(make_services: Any, real_redis: Any) -> tuple[Any, str, str]:
    """A run whose root ran one turn (a tool call, then it runs again)."""
    svc = make_services(make_settings(), _model(), redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "multiply", root)
    assert await run_turn(svc, recorder.jobs[0]) is TurnOutcome.CONTINUED
    return svc, run_id, root.id


def _another(make_services: Any, real_redis: Any, svc: Any) -> Any:
    """Another process on the same Redis: it holds no state, it reads them."""
    other = make_services(make_settings(), svc.llm, redis=real_redis, start=False)
    other.scheduler = RecordingScheduler()
    return other


async def _staged_keys(redis: Any, agent_key: str) -> list[str]:
    return [k async for k in redis.scan_iter(match=f"{agent_key}:staged:*")]


async def test_a_save_writes_the_state_to_its_own_key_and_leaves_nothing_staged(
    make_services: Any, real_redis: Any
) -> None:
    svc, run_id, agent_id = await _started(make_services, real_redis)
    keys = svc.store.keys
    akey = keys.agent(run_id, agent_id)
    state = AgentState.model_validate_json(await real_redis.get(keys.agent_state(run_id, agent_id)))
    assert state.seq == 1 and state.thread[-1].content == "6*7 = 42"
    assert await real_redis.hget(akey, "state") is None
    assert await _staged_keys(real_redis, akey) == []
    # Another process (its start reads the state from its key) takes the next turns.
    other = _another(make_services, real_redis, svc)
    job = TurnJob(run_id=run_id, agent_id=agent_id, seq=1)
    assert await run_turn(other, job) is TurnOutcome.CONTINUED
    assert await run_turn(other, TurnJob(run_id=run_id, agent_id=agent_id, seq=2)) is (
        TurnOutcome.ENDED
    )
    loaded = await other.store.load_agent(run_id, agent_id)
    assert loaded is not None and loaded.result == "56" and loaded.seq == 3
    assert [a.spec.id for a in await listing.run_agents(other.store, run_id)] == [agent_id]
    assert await _staged_keys(real_redis, akey) == []


async def test_a_state_kept_in_the_hash_is_read_there_and_moved_by_the_next_save(
    make_services: Any, real_redis: Any
) -> None:
    svc, run_id, agent_id = await _started(make_services, real_redis)
    keys = svc.store.keys
    akey, skey = keys.agent(run_id, agent_id), keys.agent_state(run_id, agent_id)
    # As a save before the state had its key left it: in the hash's ``state`` field.
    await real_redis.hset(akey, "state", await real_redis.get(skey))
    await real_redis.delete(skey)
    other = _another(make_services, real_redis, svc)
    loaded = await other.store.load_agent(run_id, agent_id)
    assert loaded is not None and loaded.seq == 1
    costs = await listing.run_agent_costs(other.store, run_id)
    assert len(costs) == 1
    job = TurnJob(run_id=run_id, agent_id=agent_id, seq=1)
    assert await run_turn(other, job) is TurnOutcome.CONTINUED
    assert await real_redis.hget(akey, "state") is None
    moved = AgentState.model_validate_json(await real_redis.get(skey))
    assert moved.seq == 2 and moved.thread[-1].content == "7*8 = 56"


async def test_a_save_whose_staged_state_is_gone_applies_nothing(
    make_services: Any, real_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, run_id, agent_id = await _started(make_services, real_redis)
    keys = svc.store.keys
    akey, skey = keys.agent(run_id, agent_id), keys.agent_state(run_id, agent_id)
    before = await real_redis.get(skey)

    def lost(agent_key: str, token: str, state: AgentState) -> tuple[str, tuple[Any, ...]]:
        # The staging SET never reached the key the script is told of (it expired, say).
        key, _ = staged.stage(agent_key, token, state)
        return key, ("SET", f"{agent_key}:elsewhere", "x", "PX", 1000)

    monkeypatch.setattr(turns, "stage", lost)
    other = _another(make_services, real_redis, svc)
    with pytest.raises(ResponseError, match="staged for this save is gone"):
        await run_turn(other, TurnJob(run_id=run_id, agent_id=agent_id, seq=1))
    assert int(await real_redis.hget(akey, "seq")) == 1  # not moved on
    assert await real_redis.get(skey) == before


async def test_a_stale_save_drops_what_it_staged(make_services: Any, real_redis: Any) -> None:
    svc, run_id, agent_id = await _started(make_services, real_redis)
    state = await svc.store.load_agent(run_id, agent_id)
    assert state is not None
    saved = await svc.store.turns.commit(state, 0, [], Usage())  # seq 0: long gone
    assert not saved.saved
    assert await _staged_keys(real_redis, svc.store.keys.agent(run_id, agent_id)) == []
