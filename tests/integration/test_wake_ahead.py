"""On the inline scheduler (embedded mode), a save that wakes one agent, and schedules
nothing else, starts that agent's turn too (core/state/turn_ahead_wake.py): its lease
taken, its delivery counted and its mail read in that save's script, so that the woken turn
makes no start round trip. So does a save that schedules the agent's own next turn alone.
Against real Redis, the scripted model: a root creates a member and waits; the member
writes to it and waits; the root answers and waits; the member finishes, its result waking
the root, which finishes."""

from __future__ import annotations

from typing import Any

import pytest

from core.agent import faults
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.embedded import embedded_services
from core.runs.control import start_run
from core.state import turn_ahead
from core.types import AgentSpec
from core.types.run import RunStatus
from tests.conftest import REDIS_URL, make_settings
from tests.integration.test_turn_ahead import _deliveries, _leases, _started_by_script

pytestmark = pytest.mark.integration

TOOLS = ("create_agent", "send_message", "wait_for_messages", "finish")


def _model() -> ScriptedModel:
    member = {"name": "M", "role": "member", "purpose": "talk", "tools": TOOLS}
    wait = call("wait_for_messages")
    return (
        ScriptedModel()
        .script(
            "O",
            Reply(calls=(call("create_agent", member), wait)),
            Reply(calls=(call("send_message", {"to": "M", "body": "ping"}), wait)),
            Reply(calls=(call("finish", {"result": "done"}),)),
        )
        .script(
            "M",
            Reply(calls=(call("send_message", {"to": "parent", "body": "hello"}), wait)),
            Reply(calls=(call("finish", {"result": "42"}),)),
        )
    )


async def _talk(
    real_redis: Any, runs: list[str] | None = None
) -> tuple[Any, str, str, str, list[str], dict[str, int]]:
    settings = make_settings(redis={"url": REDIS_URL, "key_prefix": real_redis.test_prefix})
    async with embedded_services(settings, llm=_model()) as svc:
        started = _started_by_script(svc)
        root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
        run_id = await start_run(svc, "talk", root)
        if runs is not None:
            runs.append(run_id)
        await svc.scheduler.join()  # type: ignore[attr-defined]
        m = str(await svc.store.resolve_name(run_id, "M"))
        assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
        leases = await _leases(svc, run_id)
        counts = await _deliveries(svc, run_id)
        return svc, run_id, root.id, m, [*started, *leases], counts


async def test_a_woken_agents_turn_starts_with_the_save_that_woke_it(real_redis: Any) -> None:
    _svc, _run, o, m, started, counts = await _talk(real_redis)
    # Only the turns nobody woke are started by the start script; no lease is left.
    assert started == [f"{o}:0", f"{m}:0"]
    assert counts == {f"{o}:0": 1, f"{m}:0": 1, f"{o}:1": 1, f"{m}:1": 1, f"{o}:2": 1}


async def test_a_start_that_waited_too_long_is_let_go_and_made_again(
    real_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_ahead.Ahead, "fresh", lambda _self, now=None: False)
    _svc, _run, o, m, started, counts = await _talk(real_redis)
    assert started == [f"{o}:0", f"{m}:0", f"{o}:1", f"{m}:1", f"{o}:2"]
    assert counts == {f"{o}:0": 1, f"{m}:0": 1, f"{o}:1": 1, f"{m}:1": 1, f"{o}:2": 1}


async def test_a_turn_that_raises_after_its_save_lets_the_woken_turns_start_go(
    real_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[list[str], dict[str, int]]] = []
    runs: list[str] = []
    calls = 0

    async def point(svc: Any, name: str) -> None:
        nonlocal calls
        calls += name == "after_commit"
        if name == "after_commit" and calls == 2:  # the member's first save (it woke O)
            seen.append((await _leases(svc, runs[0]), await _deliveries(svc, runs[0])))
            raise RuntimeError("the turn failed after its save")

    monkeypatch.setattr(faults, "point", point)
    svc, run_id, o, m, started, counts = await _talk(real_redis, runs)
    # The save had started O's turn (its lease taken, counted) ...
    ((leased, counted),) = seen
    assert leased == [svc.store.keys.turn_lease(run_id, o, 1)]
    assert counted[f"{o}:1"] == 1
    # ... let go when the turn raised; the member's retry scheduled it again, started once.
    assert f"{o}:1" in started
    assert counts == {f"{o}:0": 1, f"{m}:0": 2, f"{m}:0:failed": 1} | {
        f"{o}:1": 1,
        f"{m}:1": 1,
        f"{o}:2": 1,
    }


async def _solo(real_redis: Any) -> tuple[str, str, list[str], dict[str, int]]:
    """An agent that calculates twice, going straight on, then finishes."""
    settings = make_settings(redis={"url": REDIS_URL, "key_prefix": real_redis.test_prefix})
    model = ScriptedModel().script(
        "S",
        Reply(calls=(call("calculate", {"expression": "1 + 1"}),)),
        Reply(calls=(call("calculate", {"expression": "2 + 2"}),)),
        Reply(calls=(call("finish", {"result": "4"}),)),
    )
    async with embedded_services(settings, llm=model) as svc:
        started = _started_by_script(svc)
        root = AgentSpec(name="S", role="solo", tools=("calculate", "finish"))
        run_id = await start_run(svc, "sums", root)
        await svc.scheduler.join()  # type: ignore[attr-defined]
        assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
        leases = await _leases(svc, run_id)
        return run_id, root.id, [*started, *leases], await _deliveries(svc, run_id)


async def test_an_agents_next_turn_starts_with_its_own_save(real_redis: Any) -> None:
    _run, s, started, counts = await _solo(real_redis)
    assert started == [f"{s}:0"]  # turns 1 and 2 started by the saves before them
    assert counts == {f"{s}:0": 1, f"{s}:1": 1, f"{s}:2": 1}


async def test_an_own_start_that_waited_too_long_is_let_go_and_made_again(
    real_redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_ahead.Ahead, "fresh", lambda _self, now=None: False)
    _run, s, started, counts = await _solo(real_redis)
    assert started == [f"{s}:0", f"{s}:1", f"{s}:2"]
    assert counts == {f"{s}:0": 1, f"{s}:1": 1, f"{s}:2": 1}
