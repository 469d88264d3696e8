"""Redis behind Sentinel: the primary dies (SIGKILL) and every process follows the replica
Sentinel promotes, by itself.

On loopback: a primary, a replica and three Sentinels (tests/integration/sentinel_cluster.py:
quorum 2, the primary seen down after 1 s), every process given only the
``redis+sentinel://`` url. The clients' test writes through the failover and checks
nothing failed; the runs' test is bench/chaos.py's harness (real ``python -m
tasks.worker`` processes and a call keeper, the Celery broker on kombu's Sentinel
transport, the OpenAI-compatible fake playing an Orchestrator and two members who exchange
messages and post to the chat): 10 runs in flight, the primary killed, every run completes
with nothing done twice. The failover's time and the model calls repeated are printed.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis as SyncRedis

from bench.chaos import SHORT_TIMERS, ChaosConfig, Report, run_phase
from core.config import Settings, load_settings
from core.process.wiring import build_services, connect_redis
from core.state.client import sync_client
from core.state.durable_writes import replicated, short_acks
from core.state.keys import Keys
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.integration.sentinel_cluster import SentinelCluster

pytestmark = pytest.mark.integration

RUNS = 10
# The failover test's watchdog (production: a round every 10 s, a stall of 3 × 5 s).
WATCHDOG_TIMERS = {"scheduler__watchdog_s": "2", "scheduler__stall_period_s": "1"}


def _recovery_s(settings: Settings) -> float:
    """How long the runs may take to end once the new primary answers: twice the longest
    chain of recovery timers a turn can meet (as bench/chaos.py derives its deadline) — a
    turn the ledger still holds for a live worker that settled it on the old primary,
    republished once its lease lapses (``celery.lease_s``); a queued turn whose message was
    lost, republished after the grace of twice that; a turn lost everywhere, or a wake-up
    claimed and lost, submitted again by the watchdog (its period plus the stall span); an
    intent taken over (``intent_claim_idle_s``, SHORT_TIMERS'); a call taken over from the
    keeper (``keeper_claim_idle_s``)."""
    sched = settings.scheduler
    chain = (
        2 * settings.celery.lease_s
        + sched.watchdog_s
        + sched.stall_periods * sched.stall_period_s
        + float(SHORT_TIMERS["scheduler__intent_claim_idle_s"])
        + settings.llm.keeper_claim_idle_s
    )
    return 2 * chain


@pytest.fixture
def cluster() -> Iterator[SentinelCluster]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    found = SentinelCluster()
    try:
        found.start()
        yield found
    finally:
        found.cleanup()


async def test_clients_follow_the_new_primary_and_writes_wait_for_the_replica(
    cluster: SentinelCluster,
) -> None:
    settings = load_settings(
        redis={
            "url": cluster.url,
            "key_prefix": "failover",
            "replicas_to_ack": 1,
            # Generous: on a loaded machine the replica's ack can take a while.
            "replicas_ack_timeout_ms": 3000,
        }
    )
    keys = Keys("failover")
    client = connect_redis(settings)
    build_services(settings, scheduler=None, redis=client)  # type: ignore[arg-type]
    sync = sync_client(settings.redis)
    script = client.register_script("return redis.call('INCR', KEYS[1])")
    try:
        await client.set("failover:before", "kept")
        # With a replica in sync, the write is on it before the call returns.
        acked = await replicated(client, keys)
        assert acked == 1, (await client.info("replication"), cluster.tail())
        assert short_acks(client) == 0
        old = cluster.primary_address()
        cluster.kill_primary()
        killed = time.monotonic()
        writes, errors = 0, 0
        while time.monotonic() - killed < 6:
            try:
                await script(keys=["failover:n"])  # a script: loaded again on the new one
                sync.incr("failover:sync")
                writes += 1
            except Exception:
                errors += 1
            await asyncio.sleep(0.02)
        new = await asyncio.to_thread(cluster.wait_for_failover)
        # No command failed: each waited (retrying) until the new primary answered.
        assert errors == 0 and writes > 0
        assert new != old
        assert await client.get("failover:before") == "kept"
        assert int(await client.get("failover:n") or 0) == writes
        assert int(sync.get("failover:sync") or 0) == writes
        # The old primary's replica is the primary now, with no replica left: a write that
        # wants one is said short, and goes on.
        assert await replicated(client, keys) == 0
        assert short_acks(client) == 1
    finally:
        await client.aclose()
        sync.close()


async def test_writes_to_a_demoted_primary_go_to_the_new_one(cluster: SentinelCluster) -> None:
    """A failover the Sentinels were asked for: the old primary lives on and is made a
    replica, so a connection still open to it answers writes with READONLY; redis-py's
    Sentinel connection takes that for a lost connection, and the retry asks the
    Sentinels where the primary is now."""
    settings = load_settings(redis={"url": cluster.url, "key_prefix": "switch"})
    client = connect_redis(settings)
    sync = sync_client(settings.redis)
    old = cluster.primary_address()
    assert old is not None
    demoted = SyncRedis(host=old[0], port=old[1], decode_responses=True)
    try:
        await client.set("switch:n", 0)
        sync.set("switch:sync", 0)
        cluster.switch_over()
        deadline = time.monotonic() + 30
        errors: list[str] = []
        # Writing all along, until the old primary says it is a replica.
        while demoted.info("replication")["role"] != "slave":
            assert time.monotonic() < deadline, cluster.tail()
            try:
                await client.incr("switch:n")
                sync.incr("switch:sync")
            except Exception as exc:
                errors.append(repr(exc))
            await asyncio.sleep(0.02)
        new = await asyncio.to_thread(cluster.wait_for_failover, 30, old)
        primary = SyncRedis(host=new[0], port=new[1], decode_responses=True)
        before = int(primary.get("switch:n") or 0), int(primary.get("switch:sync") or 0)
        for _ in range(10):  # on connections opened to the old primary
            await client.incr("switch:n")
            sync.incr("switch:sync")
        after = int(primary.get("switch:n") or 0), int(primary.get("switch:sync") or 0)
        primary.close()
        assert errors == []
        assert after == (before[0] + 10, before[1] + 10)
    finally:
        demoted.close()
        await client.aclose()
        sync.close()


async def test_writes_wait_for_no_one_when_replicas_to_ack_is_0() -> None:
    settings = load_settings(redis={"url": REDIS_URL, "key_prefix": "no-wait"})
    client = connect_redis(settings)
    build_services(settings, scheduler=None, redis=client)  # type: ignore[arg-type]
    try:
        assert await replicated(client, Keys("no-wait")) is None
        assert await client.exists(Keys("no-wait").replicated()) == 0
    finally:
        await client.aclose()


async def test_a_write_no_replica_acknowledges_is_said_and_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = load_settings(
        redis={
            "url": REDIS_URL,
            "key_prefix": "short-wait",
            "replicas_to_ack": 2,
            "replicas_ack_timeout_ms": 20,
        }
    )
    client = connect_redis(settings)
    build_services(settings, scheduler=None, redis=client)  # type: ignore[arg-type]
    try:
        assert await replicated(client, Keys("short-wait")) == 0  # the test Redis has none
        assert await replicated(client, Keys("short-wait")) == 0
        assert short_acks(client) == 2
        warnings = [r.getMessage() for r in caplog.records if "replicas wanted" in r.getMessage()]
        assert len(warnings) == 1, warnings  # said once a minute, counted each time
        assert "0 of the 2 replicas" in warnings[0]
    finally:
        await client.delete(Keys("short-wait").replicated())
        await client.aclose()


async def test_runs_in_flight_complete_after_the_primary_is_killed(
    cluster: SentinelCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The failover may lose the last writes the old primary acknowledged (no WAIT here):
    # a wake-up claimed by a save that survived, its turn's publishing lost, is submitted
    # again by the watchdog once the run made no progress for its stall span. Short here
    # (the workers inherit this environment): a round every 2 s, a stall of 3 s.
    for name, value in WATCHDOG_TIMERS.items():
        monkeypatch.setenv(f"CARAMBA_{name.upper()}", value)
    recovery_s = _recovery_s(load_settings())
    timings: dict[str, float] = {}

    with ThreadedFakeLLMServer() as server:

        async def failover(report: Report) -> None:
            started = time.monotonic()  # before the last run's launch, where the calm starts
            # Mid-flight: every run started and a good part of their turns asked. (A kill
            # before the last approval could lose a run's creation: its approval would
            # then find no run, which is not what this test is about.)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if report.launched >= RUNS and len(server.requests) >= RUNS * 4:
                    break
                await asyncio.sleep(0.05)
            cluster.kill_primary()
            killed = time.monotonic()
            report.kill_times.append(killed)
            timings["asked_at_kill"] = len(server.requests)
            timings["ended_at_kill"] = len(report.ended_at_s)
            await asyncio.to_thread(cluster.wait_for_failover)
            timings["failover_s"] = time.monotonic() - killed
            # The runs' time to end counts from here, however late the failover came.
            report.deadline_s = time.monotonic() - started + recovery_s

        config = ChaosConfig(
            name="failover",
            runs=RUNS,
            kills=0,
            latency_ms=150,
            stagger_s=0.05,
            workers=2,
            concurrency=16,
            # Until the failover ended (then recovery_s more: set by failover above).
            deadline_s=60 + recovery_s,
            # An intent a processor had taken when the primary died is taken over once
            # idle for scheduler.intent_claim_idle_s: 2 s here (SHORT_TIMERS), not 30.
            short_timers=True,
            settle_s=10,
            redis_url=cluster.url,
            log_dir=tmp_path / "logs",  # the workers' and the keeper's whole logs
        )
        report = await run_phase(server, config, disrupt=failover)
    parts = [report.line(), report.details(), report.diagnosis(), report.log_summary()]
    summary = "\n".join([*parts, f"logs: {tmp_path / 'logs'}"])
    print(
        f"failover: the new primary answered {timings.get('failover_s', -1):.1f} s after the "
        f"kill ({timings.get('asked_at_kill')} model calls asked by then); runs ended "
        f"{report.wall_s:.1f} s after the first start; model calls repeated: "
        f"{report.extra_llm_calls} ({report.reasks_in_flight_at_kill} in flight at the kill); "
        f"runs ended before the kill: {timings.get('ended_at_kill')}"
    )
    print(report.log_summary())
    assert "failover_s" in timings, summary
    # The primary died with the runs in flight.
    assert timings["ended_at_kill"] < RUNS, (timings, summary)
    assert report.completed == RUNS, summary
    assert report.stuck == 0 and report.failed == 0, summary
    assert report.lost_messages == 0, summary
    # Nothing done twice: no chat post made twice, no turn applied twice, no message sent
    # twice; and nothing a saved turn asked for left undone.
    assert report.duplicate_effects == 0, summary
    assert report.double_applied == 0, summary
    assert report.duplicate_sends == 0, summary
    assert report.missing_effects == 0, summary
    assert report.workers_alive == 2, summary


async def test_doctor_says_which_redis_it_reached_behind_sentinel(
    cluster: SentinelCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.process.doctor import _check_redis
    from core.process.doctor_types import Level

    settings = load_settings(redis={"url": cluster.url})
    check = await _check_redis(settings)
    assert check.level is Level.OK, check
    assert "Sentinel service 'caramba'" in check.detail and "TLS off" in check.detail
    assert "user default" in check.detail and "answers (Redis" in check.detail
    # A password the server does not know: the login is refused, and the password is not
    # said anywhere.
    monkeypatch.setenv("CARAMBA_REDIS_USERNAME", "ops")
    monkeypatch.setenv("CARAMBA_REDIS_PASSWORD", "not-this-one")
    check = await _check_redis(load_settings(redis={"url": cluster.url}))
    assert check.level is Level.FAIL, check
    assert "user ops" in check.detail and "refused the login" in check.detail, check
    assert "not-this-one" not in check.detail + check.fix
    assert "CARAMBA_REDIS_PASSWORD" in check.fix


async def test_a_turns_save_asks_for_the_replicas() -> None:
    """The call site: ``Turns.commit`` asks after each save that is applied (here the
    test Redis has no replica, so each ask comes back short and is counted)."""
    from core.state.store import Store
    from core.types import AgentSpec
    from core.types.agent import AgentState
    from core.types.chat import Usage

    prefix = f"save-wait-{time.monotonic_ns()}"
    settings = load_settings(
        redis={
            "url": REDIS_URL,
            "key_prefix": prefix,
            "replicas_to_ack": 1,
            "replicas_ack_timeout_ms": 5,
        }
    )
    client = connect_redis(settings)
    build_services(settings, scheduler=None, redis=client)  # type: ignore[arg-type]
    store = Store(client, Keys(prefix), 100)
    state = AgentState(spec=AgentSpec(name="Saver"), run_id="run_wait")
    try:
        await store.create_agent(state, [])
        for seq in range(3):
            state = state.model_copy(update={"seq": seq + 1})
            assert (await store.commit_turn(state, seq, [], Usage())).saved
        # A stale save (seq moved on) writes nothing and asks nothing.
        assert not (await store.commit_turn(state, 0, [], Usage())).saved
        assert short_acks(client) == 3
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_doctor_reads_the_version_as_a_user_without_info(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/redis-acl.md's user may not send INFO: the version comes from HELLO."""
    from core.process.doctor import _check_redis
    from core.process.doctor_types import Level
    from tests.integration.processes import RedisServer

    server = RedisServer()
    server.start()
    try:
        admin = SyncRedis(host="127.0.0.1", port=server.port)
        admin.acl_setuser(
            "app", enabled=True, passwords=["+app-pw"], keys=["caramba:*"],
            commands=["-@all", "+hello", "+auth", "+ping", "+select"],
        )  # fmt: skip
        admin.close()
        monkeypatch.setenv("CARAMBA_REDIS_USERNAME", "app")
        monkeypatch.setenv("CARAMBA_REDIS_PASSWORD", "app-pw")
        check = await _check_redis(load_settings(redis={"url": server.url}))
        assert check.level is Level.OK, check
        assert "user app" in check.detail and "answers (Redis 7" in check.detail, check
        assert "app-pw" not in check.detail
    finally:
        server.cleanup()


async def test_everything_over_tls_follows_the_failover() -> None:
    """Servers and Sentinels speaking TLS only: the state's clients, the start-up check and
    the Celery broker reach the primary through the Sentinels over TLS, and follow it."""
    from core.state.reach import redis_problem
    from tasks.app import make_app

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    cluster = SentinelCluster(tls=True)
    try:
        cluster.start()
        hosts = [f"127.0.0.1:{port}" for port in cluster.sentinel_ports]
        settings = load_settings(
            redis={
                "sentinels": hosts,
                "service_name": "caramba",
                "tls": True,
                "sentinel_tls": True,
                "tls_ca_file": str(cluster.ca_file),
                "key_prefix": "tls-failover",
            }
        )
        assert settings.redis.url.startswith("rediss+sentinel://")
        assert await redis_problem(settings.redis) is None
        client = connect_redis(settings)
        sync = sync_client(settings.redis)
        app = make_app(settings)
        try:
            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1)
                assert conn.default_channel.client.ping()
            await client.set("tls-failover:n", 0)
            cluster.kill_primary()
            killed = time.monotonic()
            writes, errors = 0, 0
            while time.monotonic() - killed < 5:
                try:
                    await client.incr("tls-failover:n")
                    sync.incr("tls-failover:sync")
                    writes += 1
                except Exception:
                    errors += 1
                await asyncio.sleep(0.02)
            await asyncio.to_thread(cluster.wait_for_failover)
            assert errors == 0 and writes > 0
            assert int(await client.get("tls-failover:n") or 0) == writes
            assert int(sync.get("tls-failover:sync") or 0) == writes
        finally:
            app.close()
            await client.aclose()
            sync.close()
    finally:
        cluster.cleanup()
