"""The process client's connections pack commands with hiredis, byte for byte as redis-py
does (its own packer for what hiredis does not take, with its errors), and share one
lookup of redis-py's version for CLIENT SETINFO; its pool (``QuickPool``) holds its limit,
hands every waiting command a connection and replaces a broken one."""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from redis.asyncio.connection import Connection, SSLConnection
from redis.exceptions import DataError

from core.process.wiring import connect_redis
from core.state.connections import HiredisPacking, driver_info, packing
from core.state.sentinel import FollowingConnection
from tests.conftest import REDIS_URL, make_settings


class _Level(enum.IntEnum):
    HIGH = 2


_COMMANDS: list[tuple[Any, ...]] = [
    ("SET", "k", "v"),
    ("XGROUP CREATE", "stream", "group", "$", "MKSTREAM"),
    (b"CLIENT SETINFO", b"LIB-NAME", b"x"),
    ("HINCRBYFLOAT", "usage", "cost_usd", 0.1 + 0.2),
    ("ZADD", "z", 1e-7, "m", -5, "n", 10**30, "o"),
    ("SET", "k", "héllo ☃" * 1000),
    ("SET", "k", ""),
    ("SET", "k", memoryview(b"view")),
    ("SET", "k", bytearray(b"array")),  # hiredis refuses: redis-py's packer
    ("SET", "k", _Level.HIGH),
    ("EVALSHA", "sha", 2, "a", "b", *(str(i) for i in range(90)), "x" * 12_000),
]


def _sent(chunks: Sequence[bytes | memoryview]) -> bytes:
    return b"".join(bytes(c) for c in chunks)


@pytest.mark.parametrize("args", _COMMANDS)
def test_a_command_is_packed_as_redis_py_packs_it(args: tuple[Any, ...]) -> None:
    ours, theirs = packing(Connection)(driver_info=None), Connection(driver_info=None)
    assert _sent(ours.pack_command(*args)) == _sent(theirs.pack_command(*args))


def test_what_redis_py_refuses_is_refused_the_same_way() -> None:
    ours = packing(Connection)(driver_info=None)
    for bad in (None, [1], True):
        with pytest.raises(DataError):
            ours.pack_command("SET", "k", bad)
    with pytest.raises(UnicodeEncodeError):
        ours.pack_command("SET", "k", "\udc80")


def test_another_encoding_is_left_to_redis_py() -> None:
    ours = packing(Connection)(driver_info=None, encoding="latin-1")
    theirs = Connection(driver_info=None, encoding="latin-1")
    assert _sent(ours.pack_command("SET", "k", "é")) == _sent(theirs.pack_command("SET", "k", "é"))
    assert _sent(ours.pack_command("SET", "k", "é")).endswith(b"\xe9\r\n")


def test_the_process_client_packs_with_hiredis_and_looks_its_version_up_once() -> None:
    pool = connect_redis(make_settings(redis={"url": "redis://127.0.0.1:6379/15"})).connection_pool
    assert issubclass(pool.connection_class, HiredisPacking)
    assert issubclass(pool.connection_class, Connection)
    assert pool.connection_kwargs["driver_info"] is driver_info()
    assert driver_info().lib_version  # (CLIENT SETINFO still says which client)
    tls = connect_redis(make_settings(redis={"url": "rediss://127.0.0.1:6380/15"}))
    assert issubclass(tls.connection_pool.connection_class, SSLConnection)
    assert issubclass(tls.connection_pool.connection_class, HiredisPacking)
    assert packing(packing(Connection)) is packing(Connection)


def test_behind_sentinel_too() -> None:
    settings = make_settings(redis={"sentinels": ["a:26379"], "service_name": "m"})
    pool = connect_redis(settings).connection_pool
    assert issubclass(pool.connection_class, FollowingConnection)
    assert issubclass(pool.connection_class, HiredisPacking)
    assert pool.connection_kwargs["driver_info"] is driver_info()


async def test_the_pool_holds_its_limit_and_every_waiting_command_gets_a_connection() -> None:
    client = connect_redis(
        make_settings(redis={"url": REDIS_URL, "max_connections": 2, "pool_timeout_s": 30})
    )
    pool = client.connection_pool
    key = f"caramba-test-pool-{uuid.uuid4().hex}"
    try:
        # 12 commands that each hold a connection for 50 ms, on a pool of 2.
        replies = await asyncio.gather(*(client.blpop([key], timeout=0.05) for _ in range(12)))
        assert replies == [None] * 12
        assert len(pool._available_connections) + len(pool._in_use_connections) <= 2
        assert not pool._in_use_connections
        assert await client.ping()
    finally:
        await client.aclose()


async def test_a_connection_closed_by_the_server_is_replaced() -> None:
    client = connect_redis(make_settings(redis={"url": REDIS_URL}))
    try:
        assert await client.client_setname("caramba-test-pool-killed")
        await client.set("caramba-test-pool-x", "1", ex=5)
        admin = connect_redis(make_settings(redis={"url": REDIS_URL}))
        await admin.execute_command(
            "CLIENT", "KILL", "SKIPME", "YES", "ID", await client.client_id()
        )
        await admin.aclose()
        assert await client.get("caramba-test-pool-x") == "1"  # a new connection, retried
    finally:
        await client.aclose()
