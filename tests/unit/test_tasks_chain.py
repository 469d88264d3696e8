"""Turn chaining (tasks.chain): which turn a task takes back to run next, and what the
turn ledger is told as a chain runs (no broker, no Redis: the moves are recorded)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.config import load_settings
from core.scheduler.base import TurnJob, TurnOutcome
from core.state.ledger_moves import RIDER, start_hold_argv
from tasks.app import make_app
from tasks.chain import CURRENT, Chain, run_chain
from tasks.ledger import TurnLedger
from tasks.scheduler import CeleryScheduler


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


# --- run_chain: what the ledger is told, turn by turn ------------------------------------


class Moves:
    """Stands for the worker's LedgerMoves: records each move as (settled, held) task ids."""

    def __init__(self) -> None:
        self.log: list[tuple[list[str], list[str]]] = []

    async def move(self, *, settle=(), hold=(), lease_s=0.0) -> None:
        self.log.append(([_task(m) for m in settle], [_task(m) for m in hold]))


def _task(member: str) -> str:
    return TurnLedger.parse(member)[1].agent_id + f":{TurnLedger.parse(member)[1].seq}"


@pytest.fixture
def scheduler(monkeypatch) -> Iterator[tuple[CeleryScheduler, Moves, list[str]]]:
    settings = load_settings(
        redis={"url": "redis://127.0.0.1:6379/15", "key_prefix": "unit"},
        celery={"chain_turns": 5},
    )
    app = make_app(settings)
    scheduler = CeleryScheduler(app, settings)
    moves, handed = Moves(), []
    scheduler._moves = moves  # type: ignore[assignment]

    async def hand_over(task_id: str, job: TurnJob) -> None:
        handed.append(f"{job.agent_id}:{job.seq}")

    monkeypatch.setattr(scheduler, "hand_over", hand_over)
    yield scheduler, moves, handed
    scheduler.close()
    app.close()


def _turns(scheduler: CeleryScheduler, raising: set[int]) -> Callable[[TurnJob], Any]:
    """Agent a's turns 0, 1, 2: each schedules the next, the last ends; those in
    ``raising`` raise after scheduling. Each starts as a turn's start script does: the
    task's hold of its own turn rides on it (logged as a move of its own here)."""

    async def handle(job: TurnJob) -> TurnOutcome:
        if rode := start_hold_argv(job.run_id, job.agent_id, job.seq):
            scheduler._moves.log.append(([], [_task(rode[-1])]))  # type: ignore[union-attr]
        if job.seq < 2:
            await scheduler.submit(job.model_copy(update={"seq": job.seq + 1}))
        if job.seq in raising:
            raise RuntimeError(f"turn {job.seq} failed")
        return TurnOutcome.ENDED if job.seq == 2 else TurnOutcome.CONTINUED

    return handle


async def test_a_chain_holds_each_turn_as_it_is_scheduled_and_settles_the_ended_ones(
    scheduler,
) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    assert await run_chain(sched, _turns(sched, set()), job, "task-0") is TurnOutcome.ENDED
    assert moves.log == [
        ([], ["a:0"]),  # the task's own turn, as it starts
        ([], ["a:1"]),  # scheduled by turn 0: held before submit returned
        (["a:0"], ["a:2"]),  # scheduled by turn 1, with turn 0 settled in the same script
    ]
    # The chain ended: the last two no longer held, settled with the next renewal.
    assert [_task(m) for m in sched._unsettled] == ["a:1", "a:2"]
    assert handed == [] and sched.holdings.snapshot() == []


async def test_a_chained_turn_that_raises_goes_to_the_broker_and_the_rest_is_settled(
    scheduler,
) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    assert await run_chain(sched, _turns(sched, {1}), job, "task-0") is TurnOutcome.CONTINUED
    # Turn 1 scheduled turn 2 then raised: both go back to the broker (held → queued).
    assert sorted(handed) == ["a:1", "a:2"]
    # Turn 0 was settled as turn 1 scheduled turn 2; nothing is left to settle.
    assert moves.log == [([], ["a:0"]), ([], ["a:1"]), (["a:0"], ["a:2"])]


async def test_the_tasks_own_turn_that_raises_stays_held_for_the_tasks_retry(scheduler) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    with pytest.raises(RuntimeError, match="turn 0 failed"):
        await run_chain(sched, _turns(sched, {0}), job, "task-0")
    assert handed == ["a:1"]  # the turn it had scheduled, given to the broker
    assert moves.log == [([], ["a:0"]), ([], ["a:1"])]  # a:0 not settled: the task retries it
    assert TurnLedger.member("task-0", job) in sched.holdings.snapshot()


def _not_held_again(monkeypatch: pytest.MonkeyPatch, sched: CeleryScheduler) -> list[str]:
    """The scheduler's ways to hold a task's own turn, recorded instead (none should run)."""
    calls: list[str] = []

    def start_hold(task_id: str, job: TurnJob) -> None:
        calls.append(f"start_hold {job.agent_id}:{job.seq}")

    async def hold(task_id: str, job: TurnJob) -> None:
        calls.append(f"hold {job.agent_id}:{job.seq}")

    monkeypatch.setattr(sched, "start_hold", start_hold)
    monkeypatch.setattr(sched, "hold", hold)
    return calls


async def test_a_turn_already_held_is_not_held_again_and_is_settled_as_usual(
    scheduler, monkeypatch
) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    sched.holdings.add(TurnLedger.member("task-0", job))  # held already (tasks.local_turns)
    calls = _not_held_again(monkeypatch, sched)
    turns = _turns(sched, set())
    assert await run_chain(sched, turns, job, "task-0", already_held=True) is TurnOutcome.ENDED
    assert calls == []
    # No hold of a:0 (its start holds nothing either); the chain goes on as usual.
    assert moves.log == [([], ["a:1"]), (["a:0"], ["a:2"])]
    assert [_task(m) for m in sched._unsettled] == ["a:1", "a:2"]
    assert handed == [] and sched.holdings.snapshot() == []


async def test_a_turn_already_held_hands_its_chained_turns_over_as_usual(
    scheduler, monkeypatch
) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    calls = _not_held_again(monkeypatch, sched)
    turns = _turns(sched, {1})
    assert await run_chain(sched, turns, job, "task-0", already_held=True) is (
        TurnOutcome.CONTINUED
    )
    assert calls == []
    # Turn 1 scheduled turn 2 then raised: both go back to the broker; turn 0 is settled.
    assert sorted(handed) == ["a:1", "a:2"]
    assert moves.log == [([], ["a:1"]), (["a:0"], ["a:2"])]


# --- the chain's moves riding on its turns' saves (core.state.ledger_moves.Ride) ---------


def _saving(scheduler: CeleryScheduler, raising: set[int]) -> Callable[[TurnJob], Any]:
    """As :func:`_turns`, but each turn's save takes the chain's ride, as the save script
    does: it settles the ride's entries and holds its follow-up, spelled from the ride."""

    async def handle(job: TurnJob) -> TurnOutcome:
        if rode := start_hold_argv(job.run_id, job.agent_id, job.seq):
            scheduler._moves.log.append(([], [_task(rode[-1])]))  # type: ignore[union-attr]
        rider, chain = RIDER.get(), CURRENT.get()
        assert rider is not None and chain is not None
        ride = rider.ride(job.run_id)
        nxt = job.model_copy(update={"seq": job.seq + 1})
        if job.seq < 2 and ride is not None:
            head, mid, tail = ride.member
            held = f"{head}{nxt.agent_id}{mid}{nxt.seq}{tail}"
            assert held == TurnLedger.member(chain.task, nxt)  # the ledger's own spelling
            rider.landed(ride, held)
        if job.seq in raising:
            raise RuntimeError(f"turn {job.seq} failed")
        if job.seq < 2:
            await scheduler.submit(nxt)
        return TurnOutcome.ENDED if job.seq == 2 else TurnOutcome.CONTINUED

    return handle


async def test_turns_whose_saves_hold_the_next_make_no_move_of_their_own(scheduler) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    assert await run_chain(sched, _saving(sched, set()), job, "task-0") is TurnOutcome.ENDED
    # The task's own turn held as it starts; the rest held and settled by the saves, the
    # last two with the next renewal: no move of their own.
    assert moves.log == [([], ["a:0"])]
    assert [_task(m) for m in sched._unsettled] == ["a:1", "a:2"]
    assert handed == [] and sched.holdings.snapshot() == []


async def test_a_turn_that_raises_after_its_save_held_the_next_hands_that_one_over(
    scheduler,
) -> None:
    sched, moves, handed = scheduler
    job = TurnJob(run_id="r1", agent_id="a", seq=0)
    assert await run_chain(sched, _saving(sched, {1}), job, "task-0") is TurnOutcome.CONTINUED
    # Turn 1's save held turn 2 (and settled turn 0); then turn 1 raised: both go back to
    # the broker.
    assert sorted(handed) == ["a:1", "a:2"]
    assert moves.log == [([], ["a:0"])]


def test_a_ledger_entry_is_spelled_as_the_generic_json_would_spell_it() -> None:
    """``TurnLedger.member`` spells a TurnJob by hand (no model dump per entry): the same
    bytes as the JSON of its dump, and every field of TurnJob in it — a field added to
    TurnJob fails here until the spelling has it too."""
    assert set(TurnJob.model_fields) == {"run_id", "agent_id", "seq", "kind"}
    for job in (
        TurnJob(run_id="run-1", agent_id="a-1", seq=7),
        TurnJob(run_id='r"ü\\n', agent_id="Ägent ✓", seq=0, kind="plan"),
    ):
        generic = TurnLedger.member("tâsk-9", job.model_dump(mode="json"))
        assert TurnLedger.member("tâsk-9", job) == generic
        assert TurnLedger.parse(generic) == ("tâsk-9", job)
