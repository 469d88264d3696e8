"""Caramba on a Redis that speaks only TLS, as an ACL user restricted to the key prefix
and the commands of docs/redis-acl.md: a CA and a server certificate are made at test
time, redis-server listens on a TLS port only, and a host's processes (``caramba worker``
with its call keeper, ``caramba slack``, ``caramba discord``, ``caramba web``) reach it with
``rediss://``, the CA bundle setting and the user and password from the environment.
A request in Slack and one in Discord go through plan → approve → a cohort that calls a
tool → the result in the thread; Redis's ACL LOG then holds no denied command, key or
channel. A plain ``redis://`` connection is refused, and what lies outside the ACL is
denied (and logged: the empty log above means something)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis
from redis.backoff import NoBackoff
from redis.retry import Retry

from bots.chat.links import Signer, run_path
from core.state.keys import Keys
from core.state.store import Store
from core.types.run import RunStatus
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.integration.hosts import DiscordDriver, Host, SlackDriver, expected, until
from tests.integration.processes import worker_env
from tests.integration.redis_tls import TLSRedis
from tests.integration.test_several_hosts import chat_fakes, host_settings, start_hosts

pytestmark = pytest.mark.integration

USER, PASSWORD = "caramba", "tls-acl-test-password"
WEB_SECRET = "tls-acl-test-web-signing-key-0123456789abcdef"
# A connection refused here is the point: asked once, not retried with redis-py's default
# backoff (about 4 s each).
ONCE = Retry(NoBackoff(), 0)


@pytest.fixture
def fake_llm() -> Iterator[ThreadedFakeLLMServer]:
    from tests.integration.hosts import cohort_responder

    with ThreadedFakeLLMServer() as server:
        server.set_responder(cohort_responder)
        yield server


@pytest.fixture
def tls_redis() -> Iterator[TLSRedis]:
    server = TLSRedis(USER, PASSWORD)
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@contextlib.contextmanager
def host_on(server: TLSRedis, llm: ThreadedFakeLLMServer) -> Iterator[Host]:
    settings = host_settings("caramba", llm, server.url) | {
        "redis__tls_ca_file": str(server.ca),
        "celery__queue": "caramba-turns",
    }
    secrets = {
        "CARAMBA_REDIS_USERNAME": USER,
        "CARAMBA_REDIS_PASSWORD": PASSWORD,
        "CARAMBA_WEB_SECRET": WEB_SECRET,
    }
    host = Host("tls", {}, secrets)
    host.env |= {f"CARAMBA_{k.upper()}": v for k, v in settings.items()}
    try:
        yield host
    finally:
        host.cleanup()


def denials(server: TLSRedis) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = server.admin().acl_log(count=1000)
    return entries


async def test_the_whole_flow_over_tls_as_an_acl_user_is_never_denied(
    fake_llm: ThreadedFakeLLMServer, tls_redis: TLSRedis
) -> None:
    with host_on(tls_redis, fake_llm) as host:
        async with chat_fakes() as (slack, discord):
            slack_side, discord_side = SlackDriver(slack), DiscordDriver(discord)
            host.start_web()
            await start_hosts([host], slack, discord, slack_side)
            thread = await slack_side.ask(host, 1)
            asked = await discord_side.ask(2)
            runs = {1: await slack_side.approve(host, thread)}
            runs[2] = await discord_side.approve(asked)

            async def both_results() -> bool:
                return any(expected(1) in t for t in slack_side.texts(thread)) and any(
                    expected(2) in t for t in discord_side.texts(asked)
                )

            try:
                await until(both_results, 60, "both results")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{host.tails()}") from None
            # The web process reads the same runs: the list, and each run's page.
            assert runs[1] in await host.web_page("/")
            for number, run_id in runs.items():
                path = run_path(Signer(WEB_SECRET.encode()), run_id, 600)
                assert expected(number) in await host.web_page(path)
            # The host stops here (SIGTERM): its shutdown's commands are in the log too.

    client = AsyncRedis(
        host="127.0.0.1",
        port=tls_redis.port,
        password=tls_redis.admin_password,
        ssl=True,
        ssl_ca_certs=str(tls_redis.ca),
        decode_responses=True,
    )
    try:
        store = Store(client, Keys("caramba"), 10_000)
        for number, run_id in runs.items():
            run = await store.get_run(run_id)
            assert run.status is RunStatus.COMPLETED, (number, run.error)
        keys = [k async for k in client.scan_iter(count=1000)]
    finally:
        await client.aclose()
    # Everything Caramba wrote (its state, the chat layer, Celery's broker) is under
    # the prefix, and the processes were never refused anything.
    assert keys and all(k.startswith("caramba:") for k in keys), sorted(keys)[:20]
    assert denials(tls_redis) == []


def test_plain_redis_is_refused_and_what_lies_outside_the_acl_is_denied(
    tls_redis: TLSRedis,
) -> None:
    plain = redis.Redis(host="127.0.0.1", port=tls_redis.port, socket_timeout=3, retry=ONCE)
    with pytest.raises(redis.exceptions.ConnectionError):
        plain.ping()
    plain.close()
    # TLS without the CA bundle: the server's certificate is not trusted.
    untrusted = redis.Redis(
        host="127.0.0.1", port=tls_redis.port, ssl=True, socket_timeout=3,
        username=USER, password=PASSWORD, retry=ONCE,
    )  # fmt: skip
    with pytest.raises(redis.exceptions.ConnectionError, match="certificate"):
        untrusted.ping()
    untrusted.close()
    with pytest.raises(redis.exceptions.AuthenticationError):
        tls_redis.admin(username=USER, retry=ONCE).ping()  # the admin's password, not the user's

    user = redis.Redis(
        host="127.0.0.1", port=tls_redis.port, ssl=True, ssl_ca_certs=str(tls_redis.ca),
        username=USER, password=PASSWORD, decode_responses=True, socket_timeout=3,
    )  # fmt: skip
    try:
        assert user.set("caramba:probe", "1") and user.get("caramba:probe") == "1"
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.set("other-app:key", "1")
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.flushall()
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.config_get("*")
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.publish("other-app:news", "x")
        # A Lua script reaching past the prefix is denied too.
        with pytest.raises(redis.exceptions.ResponseError, match=r"can.t access"):
            user.eval("return redis.call('GET', 'other-app:key')", 0)
    finally:
        user.close()
    logged = {(e["reason"], e["object"]) for e in denials(tls_redis)}
    assert ("key", "other-app:key") in logged
    assert ("command", "flushall") in logged
    assert ("channel", "other-app:news") in logged


@pytest.mark.parametrize(
    ("plain", "ca", "password", "says"),
    [
        (True, True, PASSWORD, "rediss://"),
        (False, False, PASSWORD, "CARAMBA_REDIS__TLS_CA_FILE"),
        (False, True, "not-the-password", "CARAMBA_REDIS_PASSWORD"),
    ],
    ids=["plain-redis-url", "no-ca-bundle", "wrong-password"],
)
def test_a_worker_pointed_wrong_says_what_to_fix_and_never_the_password(
    tls_redis: TLSRedis, plain: bool, ca: bool, password: str, says: str
) -> None:
    url = tls_redis.url.replace("rediss://", "redis://") if plain else tls_redis.url
    env = worker_env(redis__url=url, redis__tls_ca_file=str(tls_redis.ca) if ca else "")
    env |= {"CARAMBA_REDIS_USERNAME": USER, "CARAMBA_REDIS_PASSWORD": password}
    done = subprocess.run(
        [sys.executable, "-m", "bots.cli", "worker", "-p", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert says in said and "caramba" in said, said
    assert password not in said and tls_redis.admin_password not in said
