"""The state of an agent a save created is kept by the process that saved it: the agent's
first turn started there is not sent its state back nor parses it — unless a save of
another process came since (its hash then holds a save token). Real Redis."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnOutcome
from core.state.turn_start import CREATED, HELD
from core.types import AgentSpec
from tests.conftest import make_settings

pytestmark = pytest.mark.integration

TOOLS = ("create_agent", "wait_for_messages", "finish")


async def _parent_created_a_child(make_services: Any, real_redis: Any) -> tuple[Any, str, str]:
    create = call("create_agent", {"name": "A", "role": "member", "purpose": "a"})
    model = ScriptedModel().script("O", Reply(calls=(create, call("wait_for_messages"))))
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    run_id = await start_run(svc, "t", AgentSpec(name="O", role="orchestrator", tools=TOOLS))
    assert await run_turn(svc, recorder.jobs[0]) is TurnOutcome.WAITING
    child = await svc.store.resolve_name(run_id, "A")
    assert child is not None
    return svc, run_id, child


async def test_a_new_agents_first_start_here_uses_the_state_kept(make_services, real_redis) -> None:
    svc, run_id, child = await _parent_created_a_child(make_services, real_redis)
    turns = svc.store.turns
    kept = turns.held(svc.store.keys.agent(run_id, child))
    assert kept is not None and kept[0] == CREATED

    start = await turns.start(run_id, child, 0, ("lease-token", 30_000), 10)

    assert start is not None and start.reply.state == HELD, "not sent back"
    assert start.state is kept[1]
    assert start.state.spec.name == "A" and start.state.seq == 0


async def test_a_save_elsewhere_since_sends_the_state(make_services, real_redis) -> None:
    svc, run_id, child = await _parent_created_a_child(make_services, real_redis)
    key = svc.store.keys.agent(run_id, child)
    await real_redis.hset(key, "commit_token", "another-process")  # (its save's token)

    start = await svc.store.turns.start(run_id, child, 0, ("lease-token", 30_000), 10)

    assert start is not None and start.reply.state not in (None, HELD)
    assert start.state is not None and start.state.spec.name == "A"
