"""Turn chaining (tasks.chain): which turn a task takes back to run next."""

from __future__ import annotations

import time

from core.scheduler.base import TurnJob
from tasks.chain import Chain


def _chain(turns_left: int = 5, span_s: float = 60.0) -> Chain:
    return Chain("r1", "lead", turns_left, time.monotonic() + span_s)


def test_a_chain_takes_the_first_turn_of_its_run_any_agents() -> None:
    chain = _chain()
    member = TurnJob(run_id="r1", agent_id="member", seq=0)
    assert chain.accepts(member)
    assert chain.accepts(TurnJob(run_id="r1", agent_id="lead", seq=4))
    chain.next = ("t1", member)  # taken: the turns scheduled after it are published
    assert not chain.accepts(TurnJob(run_id="r1", agent_id="lead", seq=4))


def test_a_chain_takes_no_other_run_no_planning_and_nothing_once_spent() -> None:
    assert not _chain().accepts(TurnJob(run_id="r2", agent_id="lead", seq=1))
    assert not _chain().accepts(TurnJob(run_id="r1", kind="plan"))
    assert not _chain(turns_left=0).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))
    assert not _chain(span_s=-1).accepts(TurnJob(run_id="r1", agent_id="lead", seq=1))
