"""Turn chaining (tasks.chain): which turns a task keeps back and which one it runs next."""

from __future__ import annotations

import time

from core.scheduler.base import TurnJob
from tasks.chain import Chain


def _chain(turns_left: int = 5, span_s: float = 60.0) -> Chain:
    return Chain("r1", "lead", turns_left, time.monotonic() + span_s)


def test_a_chain_keeps_back_turns_of_its_run_only() -> None:
    chain = _chain()
    assert chain.accepts(TurnJob(run_id="r1", agent_id="other", seq=0))
    assert not chain.accepts(TurnJob(run_id="r2", agent_id="lead", seq=1))
    assert not chain.accepts(TurnJob(run_id="r1", kind="plan"))
    assert not _chain(turns_left=0).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))
    assert not _chain(span_s=-1).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))


def test_the_agents_own_next_turn_runs_next_else_the_first_scheduled() -> None:
    chain = _chain()
    child = TurnJob(run_id="r1", agent_id="child", seq=0)
    own = TurnJob(run_id="r1", agent_id="lead", seq=4)
    chain.deferred = [child, own]
    assert chain.pick() == own and chain.deferred == [child]
    chain.deferred = [child, TurnJob(run_id="r1", agent_id="child2", seq=0)]
    assert chain.pick() == child and chain.agent_id == "child"  # its turns chain on
    assert len(chain.deferred) == 1


def test_a_spent_chain_picks_nothing() -> None:
    chain = _chain(turns_left=0)
    chain.deferred = [TurnJob(run_id="r1", agent_id="lead", seq=4)]
    assert chain.pick() is None and len(chain.deferred) == 1
