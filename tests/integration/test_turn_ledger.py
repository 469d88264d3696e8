"""The turn ledger (tasks/ledger.py) against real Redis: queued and held entries, leases
that lapse or are renewed, claims that never forget, and the scheduler's sweep publishing
a lost turn again under its own task id."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from core.config import load_settings
from core.scheduler.base import TurnJob
from core.state.ledger_moves import LedgerMoves
from tasks.app import make_app
from tasks.ledger import TurnLedger
from tasks.scheduler import CeleryScheduler, broker_key_prefix
from tests.conftest import REDIS_URL
from tests.integration.processes import unique_prefix

pytestmark = pytest.mark.integration

LEASE_S = 0.3


@pytest.fixture
def prefix() -> Iterator[str]:
    with unique_prefix() as name:
        yield name


@pytest.fixture
def ledger(prefix: str) -> Iterator[TurnLedger]:
    ledger = TurnLedger(Redis.from_url(REDIS_URL, decode_responses=True), prefix)
    yield ledger
    ledger.close()


def entry(agent: str) -> str:
    return TurnLedger.member(f"task-{agent}", TurnJob(run_id="r", agent_id=agent, seq=0))


def claim(ledger: TurnLedger, queue_empty: bool = True, grace_s: float = 0.0) -> list[str]:
    return ledger.claim_stale(
        grace_s=grace_s, visibility_s=60, queue_empty=queue_empty, lease_s=LEASE_S
    )[1]


def test_an_entry_is_queued_then_held_then_settled(ledger: TurnLedger) -> None:
    a = entry("a")
    ledger.record(a)
    assert ledger.pending() == 1
    ledger.hold([a], lease_s=60)  # a worker runs it
    assert ledger._redis.zscore(ledger.key, a) is None
    assert ledger._redis.zscore(ledger.held_key, a) is not None
    assert claim(ledger) == []  # held under a live lease: nobody takes it
    ledger.settle(a)
    assert ledger.pending() == 0
    ledger.renew([a], lease_s=60)  # a late renewal does not bring a settled entry back
    assert ledger.pending() == 0


def test_a_lapsed_lease_is_claimed_once_and_a_renewed_one_never(ledger: TurnLedger) -> None:
    dead, alive = entry("dead"), entry("alive")
    ledger.hold([dead, alive], lease_s=LEASE_S)
    for _ in range(4):  # the live worker renews every lease / 3
        time.sleep(LEASE_S / 3)
        ledger.renew([alive], lease_s=LEASE_S)
    assert claim(ledger) == [dead]
    assert claim(ledger) == []  # claimed: another sweeper gets nothing
    assert ledger.pending() == 2


def test_a_claim_that_is_never_published_is_claimed_again(ledger: TurnLedger) -> None:
    lost = entry("lost")
    ledger.record(lost)
    assert claim(ledger) == [lost]  # the claimer is killed before it publishes
    assert claim(ledger) == []
    assert ledger.pending() == 1  # not forgotten
    time.sleep(LEASE_S + 0.1)  # the claim's lease lapses
    assert claim(ledger) == [lost]


def test_after_publishing_a_claim_is_queued_again_unless_a_worker_took_it(
    ledger: TurnLedger,
) -> None:
    taken, waiting = entry("taken"), entry("waiting")
    ledger.record(taken)
    ledger.record(waiting)
    deadline, claimed = ledger.claim_stale(
        grace_s=0, visibility_s=60, queue_empty=True, lease_s=LEASE_S
    )
    assert sorted(claimed) == sorted([taken, waiting])
    ledger.hold([taken], lease_s=60)  # a worker received the new copy before the release
    assert ledger.release(claimed, deadline=deadline) == 1
    assert ledger._redis.zscore(ledger.held_key, taken) is not None  # still the worker's
    assert ledger._redis.zscore(ledger.key, waiting) is not None


def test_a_queued_entry_waits_for_an_empty_queue_or_the_visibility_timeout(
    ledger: TurnLedger,
) -> None:
    queued = entry("queued")
    ledger.record(queued)
    time.sleep(0.05)
    assert claim(ledger, queue_empty=False) == []  # the broker still has messages to give
    assert claim(ledger, queue_empty=True, grace_s=60) == []  # within the grace period
    assert claim(ledger, queue_empty=True) == [queued]


def test_a_retry_is_due_when_its_back_off_ends(ledger: TurnLedger) -> None:
    retried = entry("retried")
    ledger.hold([retried], lease_s=60)
    ledger.release([retried], delay_s=60)  # Celery holds the retry for a minute
    assert claim(ledger) == []
    assert ledger.pending() == 1


def test_the_sweep_publishes_a_lost_turn_again_under_its_task_id(prefix: str) -> None:
    settings = load_settings(
        redis={"url": REDIS_URL, "key_prefix": prefix}, celery={"lease_s": LEASE_S}
    )
    app = make_app(settings)
    scheduler = CeleryScheduler(app, settings)
    broker = Redis.from_url(REDIS_URL, decode_responses=True)
    queue_key = broker_key_prefix(settings) + settings.celery.queue
    job = TurnJob(run_id="r", agent_id="lost", seq=3)
    try:
        # Recorded, then popped by a worker that died before reading it: in no broker list.
        scheduler.ledger.record(TurnLedger.member("task-lost", job))
        assert scheduler.republish_stale_sync() == 0  # within the grace period
        time.sleep(2 * LEASE_S + 0.1)
        assert scheduler.republish_stale_sync() == 1
        assert scheduler.republish_stale_sync() == 0  # queued again; the broker has it
        messages = [json.loads(m) for m in broker.lrange(queue_key, 0, -1)]
        assert [m["headers"]["id"] for m in messages] == ["task-lost"]
        assert scheduler.ledger.pending() == 1  # until a worker settles it
    finally:
        scheduler.close()
        app.close()
        broker.close()


async def test_a_move_settles_the_ended_turns_and_holds_the_next_in_one_script(
    ledger: TurnLedger, prefix: str
) -> None:
    ended, running, chained = entry("ended"), entry("running"), entry("chained")
    ledger.record(chained)  # (a chained turn is normally not recorded first)
    ledger.hold([ended, running], lease_s=60)
    redis = AsyncRedis.from_url(REDIS_URL, decode_responses=True)
    try:
        moves = LedgerMoves(redis, prefix)
        await moves.move(settle=[ended], hold=[chained], lease_s=60)
        assert ledger._redis.zscore(ledger.held_key, ended) is None
        assert ledger._redis.zscore(ledger.key, chained) is None
        assert ledger._redis.zscore(ledger.held_key, chained) is not None
        assert ledger.pending() == 2  # running and chained, both held
        await moves.move(settle=[running, chained])
        assert ledger.pending() == 0
        await moves.move(hold=[entry("short")], lease_s=LEASE_S)
        await asyncio.sleep(LEASE_S + 0.1)  # its worker died: the lease lapses
        assert claim(ledger) == [entry("short")]
    finally:
        await redis.aclose()
