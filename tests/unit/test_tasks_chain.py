"""Turn chaining (tasks.chain): which turns a task takes back and which one it runs next."""

from __future__ import annotations

import time

from core.scheduler.base import TurnJob
from tasks.chain import Chain


def _chain(turns_left: int = 5, span_s: float = 60.0) -> Chain:
    return Chain("r1", "lead", turns_left, time.monotonic() + span_s)


def test_a_chain_takes_back_turns_of_its_run_only() -> None:
    chain = _chain()
    assert chain.accepts(TurnJob(run_id="r1", agent_id="other", seq=0))
    assert not chain.accepts(TurnJob(run_id="r2", agent_id="lead", seq=1))
    assert not chain.accepts(TurnJob(run_id="r1", kind="plan"))
    assert not _chain(turns_left=0).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))
    assert not _chain(span_s=-1).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))


def test_the_agents_own_next_turn_is_taken_as_next_once() -> None:
    chain = _chain()
    own = TurnJob(run_id="r1", agent_id="lead", seq=4)
    assert chain.takes_as_next(own)
    assert not chain.takes_as_next(TurnJob(run_id="r1", agent_id="child", seq=0))
    chain.next = ("t1", own)
    assert not chain.takes_as_next(own)


def test_without_a_next_turn_the_first_other_runs_next_and_its_agent_chains_on() -> None:
    chain = _chain()
    first, second = (TurnJob(run_id="r1", agent_id=a, seq=0) for a in ("c1", "c2"))
    chain.deferred = [("t1", first), ("t2", second)]
    assert chain.pick() == ("t1", first)
    assert chain.agent_id == "c1" and chain.deferred == [("t2", second)]


def test_a_spent_chain_picks_nothing() -> None:
    chain = _chain(turns_left=0)
    chain.deferred = [("t1", TurnJob(run_id="r1", agent_id="c1", seq=0))]
    assert chain.pick() is None and len(chain.deferred) == 1
