"""An agent's own next turn, run next on a worker's chain, is started by the save of the turn
before it (core/state/turn_ahead.py), and so is the turn of an agent that save woke when
it is all the save schedules: its lease taken, its delivery counted and its mail read in
that save's script, so that it makes no start round trip. Against real Redis and
a real broker (the Celery scheduler's ledger), the scripted model: a root creates a member
and waits; the member calculates twice, then finishes; the root finishes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest

from core.agent import faults
from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.jobs import handle
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.state import turn_ahead
from core.state.ledger_moves import RIDER, Ride
from core.types import AgentSpec
from core.types.messages import TextMessage
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.chain import run_chain
from tasks.ledger import TurnLedger
from tasks.scheduler import CeleryScheduler
from tests.conftest import REDIS_URL, make_settings
from tests.integration.test_lost_save_reply import _SCRIPT_SHA, proxied  # noqa: F401
from tests.integration.test_turn_round_trips import RoundTrips

pytestmark = pytest.mark.integration

TOOLS = ("create_agent", "wait_for_messages", "calculate", "finish")
CALC = Reply(calls=(call("calculate", {"expression": "6*7"}),))
NOTE = "a note sent after the save"


@pytest.fixture
async def worker(real_redis: Any) -> AsyncIterator[tuple[Any, CeleryScheduler]]:
    settings = make_settings(
        redis={"url": REDIS_URL, "key_prefix": real_redis.test_prefix},
        celery={"chain_turns": 10},
    )
    member = {"name": "M", "role": "member", "purpose": "count", "tools": TOOLS}
    model = (
        ScriptedModel()
        .script(
            "O",
            Reply(calls=(call("create_agent", member), call("wait_for_messages"))),
            Reply(calls=(call("finish", {"result": "42"}),)),
        )
        .script("M", CALC, CALC, Reply(calls=(call("finish", {"result": "42"}),)))
    )
    app = make_app(settings)
    scheduler = CeleryScheduler(app, settings)
    svc = build_services(settings, scheduler, llm=model, redis=real_redis)
    scheduler.attach(svc)
    try:
        yield svc, scheduler
    finally:
        await scheduler.aclose()
        app.close()


async def _first(svc: Any, scheduler: CeleryScheduler) -> tuple[str, str, TurnJob]:
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "count", root)
    (member,) = scheduler.ledger._redis.zrange(scheduler.ledger.key, 0, -1)
    task_id, job = TurnLedger.parse(str(member))
    return run_id, task_id, job


def _started_by_script(svc: Any) -> list[str]:
    """The turns the start script is sent for (``<agent>:<seq>``), recorded from now."""
    started: list[str] = []
    script = svc.store.turns._start

    async def recorded(keys: Any = None, args: Any = None, client: Any = None) -> Any:
        started.append(str(args[3]))
        return await script(keys=keys, args=args, client=client)

    svc.store.turns._start = recorded
    return started


async def _deliveries(svc: Any, run_id: str) -> dict[str, int]:
    raw = await svc.redis.hgetall(svc.store.keys.deliveries(run_id))
    return {str(k): int(v) for k, v in raw.items() if ":" in str(k)}


async def _leases(svc: Any, run_id: str) -> list[str]:
    pattern = svc.store.keys.turn_lease(run_id, "*", 0)[:-1] + "*"
    return [str(k) async for k in svc.redis.scan_iter(match=pattern)]


async def test_the_members_next_turns_start_with_the_save_before_them(
    worker: Any, real_redis: Any
) -> None:
    svc, scheduler = worker
    run_id, task_id, job = await _first(svc, scheduler)
    started = _started_by_script(svc)
    trips = RoundTrips(real_redis, svc.store.pipe)
    sent: dict[str, list[str]] = {}

    async def observed(turn: TurnJob) -> TurnOutcome:
        trips.take()
        outcome = await handle(svc, turn)
        sent[f"{turn.agent_id}:{turn.seq}"] = trips.take()
        return outcome

    assert await run_chain(scheduler, observed, job, task_id) is TurnOutcome.ENDED

    assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
    root, m = job.agent_id, await svc.store.resolve_name(run_id, "M")
    # Its first turn is started as before; the member's own next turns by the saves
    # before them, and the root's wake-up by the member's last save (which woke it, and
    # held it for the chain): each of those turns' one round trip is its save — the
    # root's end too (its start read the run's record: ``core.state.turn_cas``).
    assert started == [f"{root}:0", f"{m}:0"]
    assert sent[f"{m}:1"] == ["EVALSHA"] and sent[f"{m}:2"] == ["EVALSHA"], sent
    assert sent[f"{root}:1"] == ["EVALSHA"], sent
    assert len(sent[f"{m}:0"]) == 2, sent  # its start and its save
    # Each delivered once, counted once; every lease released by its turn's save.
    counts = await _deliveries(svc, run_id)
    assert counts == {f"{root}:0": 1, f"{m}:0": 1, f"{m}:1": 1, f"{m}:2": 1, f"{root}:1": 1}
    assert await _leases(svc, run_id) == []
    assert scheduler.published == 1


async def test_mail_that_comes_after_the_save_is_read_once_by_the_turn_after(
    worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, scheduler = worker
    run_id, task_id, job = await _first(svc, scheduler)
    member_id = ""
    calls = 0
    leased: list[str] = []

    async def point(_svc: object, name: str) -> None:
        nonlocal calls, member_id
        if name != "after_commit":
            return
        calls += 1
        if calls == 2:  # the member's first save (its next turn started by it): mail comes
            member_id = str(await svc.store.resolve_name(run_id, "M"))
            # (its next turn started by the save: its lease held, its mail read)
            leased.extend(await _leases(svc, run_id))
            note = TextMessage(run_id=run_id, sender=job.agent_id, recipient=member_id, body=NOTE)
            await svc.bus.deliver(run_id, note)

    monkeypatch.setattr(faults, "point", point)
    assert await run_chain(scheduler, partial(handle, svc), job, task_id) is TurnOutcome.ENDED

    assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
    assert leased == [svc.store.keys.turn_lease(run_id, member_id, 1)]
    state = await svc.store.load_agent(run_id, member_id)
    assert state is not None
    # Read by a later turn of the member, once, and acknowledged with its save.
    assert sum(NOTE in str(m.content) for m in state.thread) == 1
    inbox = svc.store.keys.inbox(run_id, member_id)
    pending = await svc.redis.xpending(inbox, member_id)
    assert int(pending["pending"]) == 0


async def test_a_turn_that_raises_after_its_save_lets_the_next_turns_start_go(
    worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, scheduler = worker
    run_id, task_id, job = await _first(svc, scheduler)
    calls = 0

    leased: list[str] = []

    async def point(_svc: object, name: str) -> None:
        nonlocal calls
        calls += name == "after_commit"
        if name == "after_commit" and calls == 2:  # the member's first save
            leased.extend(await _leases(svc, run_id))
            raise RuntimeError("the turn failed after its save")

    monkeypatch.setattr(faults, "point", point)
    await run_chain(scheduler, partial(handle, svc), job, task_id)

    member_id = str(await svc.store.resolve_name(run_id, "M"))
    redis = scheduler.ledger._redis
    handed = [TurnLedger.parse(str(m))[1] for m in redis.zrange(scheduler.ledger.key, 0, -1)]
    nxt = TurnJob(run_id=run_id, agent_id=member_id, seq=1)
    # The save had started the next turn: its lease taken.
    assert leased == [svc.store.keys.turn_lease(run_id, member_id, 1)]
    # Handed to the broker with the turn that raised; the start its save made let go: no
    # lease, not counted.
    assert sorted(handed, key=lambda j: j.seq) == [nxt.model_copy(update={"seq": 0}), nxt]
    assert await _leases(svc, run_id) == []
    assert (await _deliveries(svc, run_id)).get(f"{member_id}:1", 0) == 0
    # Its delivery runs at once (no lease to wait for), counted once.
    monkeypatch.setattr(faults, "point", lambda *_: _nothing())
    assert await handle(svc, nxt) is TurnOutcome.CONTINUED
    assert (await _deliveries(svc, run_id))[f"{member_id}:1"] == 1


async def test_a_start_that_waited_too_long_is_let_go_and_made_again(
    worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, scheduler = worker
    run_id, task_id, job = await _first(svc, scheduler)
    started = _started_by_script(svc)
    monkeypatch.setattr(turn_ahead.Ahead, "fresh", lambda _self, now=None: False)

    assert await run_chain(scheduler, partial(handle, svc), job, task_id) is TurnOutcome.ENDED

    root, m = job.agent_id, await svc.store.resolve_name(run_id, "M")
    assert started == [f"{root}:0", f"{m}:0", f"{m}:1", f"{m}:2", f"{root}:1"]
    counts = await _deliveries(svc, run_id)
    assert counts == {f"{root}:0": 1, f"{m}:0": 1, f"{m}:1": 1, f"{m}:2": 1, f"{root}:1": 1}
    assert await _leases(svc, run_id) == []


async def _nothing() -> None:
    return None


class _Rider:
    """A chain's ride, its ledger sets under the test's prefix."""

    def __init__(self, prefix: str) -> None:
        self.ride_ = Ride((f"{prefix}:queued", f"{prefix}:held"), 5000, ("t|", "|", "|"))
        self.held: list[str] = []

    def ride(self, run_id: str) -> Ride:
        return self.ride_

    def landed(self, ride: Ride, held: str) -> None:
        self.held.append(held)


async def test_a_save_whose_reply_was_lost_lets_the_next_turns_start_go(
    make_services: Any,
    proxied: Any,  # noqa: F811 (the fixture, imported)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy, client = proxied
    model = ScriptedModel().script("O", CALC, Reply(calls=(call("finish", {"result": "42"}),)))
    svc = make_services(make_settings(), model, redis=client, start=False)
    svc.scheduler = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "count", root)

    async def point(_svc: object, name: str) -> None:
        if name == "after_tools":
            proxy.arm(_SCRIPT_SHA)

    monkeypatch.setattr(faults, "point", point)
    offer = turn_ahead.AheadOffer()
    rider, ahead = RIDER.set(_Rider(client.test_prefix)), turn_ahead.AHEAD.set(offer)
    try:
        outcome = await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=0))
    finally:
        turn_ahead.AHEAD.reset(ahead)
        RIDER.reset(rider)

    # Its first run started the next turn; the reply lost, the retry found the turn saved
    # (and started nothing): that start is let go, its lease and its count with it.
    assert outcome is TurnOutcome.CONTINUED and proxy.dropped == 1
    assert offer.ahead is None
    assert await _leases(svc, run_id) == []
    assert (await _deliveries(svc, run_id)).get(f"{root.id}:1", 0) == 0
    # The next turn starts as usual, at once, counted once.
    monkeypatch.setattr(faults, "point", lambda *_: _nothing())
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=1)) is (
        TurnOutcome.ENDED
    )
    assert (await _deliveries(svc, run_id))[f"{root.id}:1"] == 1
