"""A chain's ledger moves ride on its turns' saves (tasks/chain.py, core/state/ledger_moves.py),
against real Redis and a real broker: each save holds the turn it schedules next and
settles the chain's ended turns in its own script, so a chain of turns makes one ledger
round trip when it starts, whatever its length; the last ones are settled by the
worker's next renewal of its leases. A turn that raises
after its save gives the turn it held back to the broker."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest

from core.agent import faults
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.jobs import handle
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.chain import run_chain
from tasks.ledger import TurnLedger
from tasks.scheduler import CeleryScheduler, broker_key_prefix
from tests.conftest import REDIS_URL, make_settings

pytestmark = pytest.mark.integration

TOOLS = ("create_agent", "wait_for_messages", "calculate", "finish")


def _turn(member: str) -> str:
    job = TurnLedger.parse(member)[1]
    return f"{job.agent_id}:{job.seq}"


class Recorded:
    """The worker's LedgerMoves, every move of its own recorded (as agent:seq lists)."""

    def __init__(self, moves: Any) -> None:
        self.moves = moves
        self.log: list[tuple[list[str], list[str]]] = []

    async def move(self, *, settle: Any = (), hold: Any = (), lease_s: float = 0.0) -> None:
        self.log.append(([_turn(m) for m in settle], [_turn(m) for m in hold]))
        await self.moves.move(settle=settle, hold=hold, lease_s=lease_s)


@pytest.fixture
async def worker(real_redis: Any) -> AsyncIterator[tuple[Any, CeleryScheduler, Recorded, Any]]:
    """A worker's Services on real Redis: the Celery scheduler attached to its client, the
    team's model scripted (a root creates a member and waits; the member calculates, then
    finishes; the root finishes)."""
    settings = make_settings(
        redis={"url": REDIS_URL, "key_prefix": real_redis.test_prefix},
        celery={"chain_turns": 10},
    )
    model = (
        ScriptedModel()
        .script(
            "O",
            Reply(
                calls=(
                    call(
                        "create_agent",
                        {"name": "M", "role": "member", "purpose": "count", "tools": TOOLS},
                    ),
                    call("wait_for_messages"),
                )
            ),
            Reply(calls=(call("finish", {"result": "42"}),)),
        )
        .script(
            "M",
            Reply(calls=(call("calculate", {"expression": "6*7"}),)),
            Reply(calls=(call("finish", {"result": "42"}),)),
        )
    )
    app = make_app(settings)
    scheduler = CeleryScheduler(app, settings)
    svc = build_services(settings, scheduler, llm=model, redis=real_redis)
    scheduler.attach(svc)
    recorded = Recorded(scheduler._moves)
    scheduler._moves = recorded  # type: ignore[assignment]
    try:
        yield svc, scheduler, recorded, settings
    finally:
        await scheduler.aclose()
        app.close()


async def _first(svc: Any, scheduler: CeleryScheduler) -> tuple[str, str, TurnJob]:
    """A run started: its first turn published (recorded in the ledger, sent)."""
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "count", root)
    (member,) = scheduler.ledger._redis.zrange(scheduler.ledger.key, 0, -1)
    task_id, job = TurnLedger.parse(str(member))
    assert job == TurnJob(run_id=run_id, agent_id=root.id, seq=0)
    return run_id, task_id, job


def _held(scheduler: CeleryScheduler) -> list[str]:
    return sorted(
        _turn(str(m)) for m in scheduler.ledger._redis.zrange(scheduler.ledger.held_key, 0, -1)
    )


async def test_each_save_holds_the_next_turn_and_settles_the_ended_ones(worker: Any) -> None:
    svc, scheduler, recorded, _settings = worker
    run_id, task_id, job = await _first(svc, scheduler)
    seen: list[tuple[str, list[str]]] = []
    started: list[list[str]] = []
    turn_start = svc.store.turn_start

    async def observed(turn: TurnJob) -> TurnOutcome:
        seen.append((f"{turn.agent_id}:{turn.seq}", _held(scheduler)))
        return await handle(svc, turn)

    async def observed_start(*args: Any, **kwargs: Any) -> Any:
        reply = await turn_start(*args, **kwargs)
        started.append(_held(scheduler))
        return reply

    svc.store.turn_start = observed_start
    outcome = await run_chain(scheduler, observed, job, task_id)

    assert outcome is TurnOutcome.ENDED
    assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
    member_id = await svc.store.resolve_name(run_id, "M")
    root, m = job.agent_id, member_id
    # Each chained turn was held by the save that scheduled it; the save of the turn after
    # it settled the one before (the turn whose save scheduled it stays held until then).
    # The task's own turn is held by its start script, not before.
    assert started[0] == [f"{root}:0"]
    assert seen == [
        (f"{root}:0", []),
        (f"{m}:0", sorted([f"{root}:0", f"{m}:0"])),
        (f"{m}:1", sorted([f"{m}:0", f"{m}:1"])),
        (f"{root}:1", sorted([f"{m}:1", f"{root}:1"])),
    ]
    # The worker's own moves: none (the task's turn held by its start, the chained ones by
    # the saves). Nothing else was published.
    assert recorded.log == []
    assert scheduler.published == 1
    # The last two, no longer this worker's, are settled by its next renewal.
    assert scheduler.holdings.snapshot() == []
    assert _held(scheduler) == sorted([f"{m}:1", f"{root}:1"])
    assert scheduler.renew_sync() == 0
    assert scheduler.ledger.pending() == 0


async def test_a_turn_that_raises_after_its_save_gives_the_turn_it_held_to_the_broker(
    worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, scheduler, recorded, settings = worker
    run_id, task_id, job = await _first(svc, scheduler)

    async def point(_svc: object, name: str) -> None:
        if name == "after_commit":
            raise RuntimeError("the turn failed after its save")

    monkeypatch.setattr(faults, "point", point)
    with pytest.raises(RuntimeError, match="after its save"):
        await run_chain(scheduler, partial(handle, svc), job, task_id)

    member_id = await svc.store.resolve_name(run_id, "M")
    redis = scheduler.ledger._redis
    (queued,) = redis.zrange(scheduler.ledger.key, 0, -1)
    handed_task, handed = TurnLedger.parse(str(queued))
    # The member's first turn, held by the root's save, is queued again and published
    # under the task id the save held it with; the root's own turn stays held for the
    # task's retry.
    assert handed == TurnJob(run_id=run_id, agent_id=member_id, seq=0)
    assert _held(scheduler) == [f"{job.agent_id}:0"]
    assert scheduler.holdings.snapshot() == [TurnLedger.member(task_id, job)]
    queue = broker_key_prefix(settings) + settings.celery.queue
    sent = [json.loads(m)["headers"]["id"] for m in redis.lrange(queue, 0, -1)]
    assert sorted(sent) == sorted([task_id, handed_task])  # the run's first, and this one
    assert recorded.log == []  # the root's turn held by its start script


async def test_a_renewal_settles_what_ended_since_but_not_what_is_held_again(
    worker: Any,
) -> None:
    _svc, scheduler, _recorded, _settings = worker
    ledger = scheduler.ledger
    ended, again, running = (
        TurnLedger.member(f"task-{n}", TurnJob(run_id="r", agent_id=n, seq=0))
        for n in ("ended", "again", "running")
    )
    await scheduler.hold("task-ended", TurnLedger.parse(ended)[1])
    await scheduler.hold("task-again", TurnLedger.parse(again)[1])
    await scheduler.hold("task-running", TurnLedger.parse(running)[1])
    scheduler.settle_later([ended, again])
    # A copy of "again"'s message runs here meanwhile: held again, it stays held.
    await scheduler.hold("task-again", TurnLedger.parse(again)[1])
    before = ledger._redis.zscore(ledger.held_key, running)
    assert scheduler.renew_sync() == 2
    assert _held(scheduler) == ["again:0", "running:0"]
    assert float(ledger._redis.zscore(ledger.held_key, running) or 0) >= float(before or 0)
    assert scheduler._unsettled == []
