"""Where a process's Redis is (core/state/client.py): a direct url or the primary a set of
Sentinels names, TLS, an ACL user whose password comes only from the environment; the
Celery broker follows the same settings; nothing prints a password."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigError
from core.state.client import broker, sync_client
from core.state.reach import redis_problem
from core.state.redis_target import target
from tasks.app import broker_security, broker_url, transport_options
from tests.conftest import REDIS_URL, make_settings


def test_sentinels_and_service_name_are_one_url_every_reader_sees() -> None:
    settings = make_settings(
        redis={"sentinels": ["10.0.0.1:26379", "10.0.0.2:26380"], "service_name": "caramba"}
    )
    assert settings.redis.url == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/caramba/0"
    where = target(settings.redis)
    assert where.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26380))
    assert (where.service_name, where.db, where.tls) == ("caramba", 0, False)


def test_sentinels_without_a_service_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="service_name"):
        make_settings(redis={"sentinels": ["10.0.0.1:26379"]})


def test_sentinels_and_the_url_of_one_server_are_not_both_taken() -> None:
    with pytest.raises(ConfigError, match="keep one"):
        make_settings(
            redis={"url": "redis://10.0.0.9:6379/0", "sentinels": ["a:1"], "service_name": "m"}
        )
    tls = make_settings(redis={"sentinels": ["a:1"], "service_name": "m", "tls": True})
    assert target(tls.redis).tls and tls.redis.url.startswith("rediss+sentinel://")


@pytest.mark.parametrize(
    ("url", "service", "db", "tls"),
    [
        ("rediss+sentinel://a:1,b:2/svc/3", "svc", 3, True),
        ("redis+sentinel://a:1,b:2/svc", "svc", 0, False),
        ("sentinel://a:1;sentinel://b:2/4", "fromsettings", 4, False),
    ],
)
def test_the_sentinel_url_forms_redis_py_and_kombu_users_write(
    url: str, service: str, db: int, tls: bool
) -> None:
    where = target(make_settings(redis={"url": url, "service_name": "fromsettings"}).redis)
    assert where.sentinels == (("a", 1), ("b", 2))
    assert (where.service_name, where.db, where.tls) == (service, db, tls)


def test_a_url_of_an_unknown_scheme_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"redis\.url must start with"):
        make_settings(redis={"url": "http://127.0.0.1:6379"})


def test_a_password_in_config_toml_is_refused_with_the_variables_to_use(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[redis]\nurl = "rediss://app:hunter2@redis.example:6380/0"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert "CARAMBA_REDIS_PASSWORD" in caught.value.hint
    assert "hunter2" not in str(caught.value)
    # A user name alone is no secret.
    config.write_text('[redis]\nurl = "rediss://app@redis.example:6380/0"\n')
    assert target(load_settings(config).redis).username == "app"


def test_user_and_password_come_from_the_environment_and_are_never_described(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CARAMBA_REDIS_USERNAME", "caramba-app")
    monkeypatch.setenv("CARAMBA_REDIS_PASSWORD", "s3cret-pw")
    settings = make_settings(redis={"url": "rediss://redis.example:6380/2"})
    where = target(settings.redis)
    text = where.describe()
    assert "redis.example:6380" in text and "TLS on" in text and "caramba-app" in text
    assert "s3cret-pw" not in text
    assert broker_security(settings)["broker_password"] == "s3cret-pw"
    assert broker_security(settings)["broker_user"] == "caramba-app"
    assert broker_security(settings)["broker_use_ssl"]["ssl_cert_reqs"] == "required"


def test_a_missing_ca_file_is_said_by_name() -> None:
    settings = make_settings(redis={"url": "rediss://h:6380/0", "tls_ca_file": "/nope/ca.pem"})
    with pytest.raises(ConfigError, match=r"/nope/ca\.pem"):
        broker(settings.redis)


def test_the_broker_behind_sentinel_is_kombus_sentinel_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CARAMBA_REDIS_SENTINEL_PASSWORD", "sentinel-pw")
    settings = make_settings(redis={"sentinels": ["a:26379", "b:26379"], "service_name": "m"})
    assert broker_url(settings) == "sentinel://a:26379;sentinel://b:26379/0"
    options = transport_options(settings)
    assert options["master_name"] == "m"
    assert options["sentinel_kwargs"]["password"] == "sentinel-pw"
    assert "global_keyprefix" in options


async def test_a_redis_that_refuses_the_login_is_said_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CARAMBA_REDIS_USERNAME", "no-such-user")
    monkeypatch.setenv("CARAMBA_REDIS_PASSWORD", "wrong-pw")
    problem = await redis_problem(make_settings(redis={"url": REDIS_URL}).redis)
    assert problem is not None
    assert "refused the login" in str(problem) and "no-such-user" in str(problem)
    assert "wrong-pw" not in str(problem) + problem.hint


def test_a_separate_broker_behind_sentinel_is_read_by_the_one_client_factory() -> None:
    """``celery.broker_url`` naming a broker of its own behind Sentinel (kombu's form, or
    redis-py's): the broker's queue length is read through the Sentinels, as the state's
    Redis is (redis.url here is another server)."""
    from redis.sentinel import SentinelConnectionPool

    from core.state.client import broker_settings, sync_client

    settings = make_settings(
        redis={"url": "redis://10.0.0.9:6379/0", "service_name": "brokers"},
        celery={"broker_url": "sentinel://10.0.0.1:26379;sentinel://10.0.0.2:26380/2"},
    )
    where = broker_settings(settings.redis, settings.celery.broker_url)
    assert target(where).sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26380))
    for url, service in (
        (settings.celery.broker_url, "brokers"),
        ("redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/other/2", "other"),
    ):
        client = sync_client(broker_settings(settings.redis, url))
        try:
            pool = client.connection_pool
            assert isinstance(pool, SentinelConnectionPool)
            assert pool.service_name == service
            assert pool.connection_kwargs["db"] == 2
            found = [s.connection_pool.connection_kwargs for s in pool.sentinel_manager.sentinels]
            assert [(k["host"], k["port"]) for k in found] == [
                ("10.0.0.1", 26379),
                ("10.0.0.2", 26380),
            ]
        finally:
            client.close()
    # No separate broker: the state's own settings.
    assert broker_settings(settings.redis, "") is settings.redis


@pytest.mark.integration
def test_the_scheduler_counts_the_queue_of_a_separate_broker() -> None:
    """The queue length the ledger's sweep reads comes from ``celery.broker_url``, not from
    redis.url (here a port nobody listens on)."""
    import uuid

    from redis import Redis

    from core.state.keys import Keys
    from tasks.app import make_app
    from tasks.scheduler import CeleryScheduler

    prefix = f"test-{uuid.uuid4().hex[:8]}"
    settings = make_settings(
        redis={"url": "redis://127.0.0.1:1/0", "key_prefix": prefix},
        celery={"broker_url": REDIS_URL, "queue": "q"},
    )
    app = make_app(settings)
    scheduler = CeleryScheduler(app, settings)
    broker = Redis.from_url(REDIS_URL, decode_responses=True)
    queue = Keys(prefix).celery_queue_lists("q")[0]
    try:
        assert scheduler.broker_queue_empty()
        broker.rpush(queue, "{}")
        assert not scheduler.broker_queue_empty()
    finally:
        broker.delete(queue)
        broker.close()
        scheduler.close()
        app.close()


def test_clients_behind_sentinel_retry_long_enough_to_outlast_a_failover() -> None:
    """Both clients, asyncio and synchronous (the ledger, Celery's threads), back off from
    0.1 s to at most 2 s between tries, over ~30 s in all: a failover takes Sentinel's
    down-after time plus an election. (The synchronous client once had the back-off's
    arguments swapped: at most 0.1 s a try, ~1 s in all, shorter than a failover.)"""
    from core.process.wiring import connect_redis

    settings = make_settings(redis={"sentinels": ["10.0.0.1:26379"], "service_name": "m"})
    sync = sync_client(settings.redis)
    asynchronous = connect_redis(settings)
    for retry in (sync.get_retry(), asynchronous.get_retry()):
        assert retry is not None
        backoff = retry._backoff
        ceilings = [min(backoff._cap, backoff._base * 2**n) for n in range(retry._retries)]
        assert ceilings[0] <= 0.2 and max(ceilings) == 2.0
        # With jitter a try waits half its ceiling on average.
        assert sum(ceilings) / 2 >= 25, sum(ceilings) / 2
