"""The Redis client's connections: no per-command time-out by default (redis-py's wraps
every send in asyncio.wait_for), a dead server found by TCP within redis.dead_server_s."""

from __future__ import annotations

import socket

from core.process.wiring import connect_redis
from core.state.client import connection_options
from tests.conftest import make_settings


def test_commands_have_no_time_out_and_tcp_finds_a_dead_server() -> None:
    options = connection_options(make_settings(redis={"dead_server_s": 30}).redis)
    assert options["socket_timeout"] is None
    assert options["socket_connect_timeout"] == 5.0
    assert options["socket_keepalive"] is True
    probes = options["socket_keepalive_options"]
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        assert probes[socket.TCP_USER_TIMEOUT] == 30_000
    if hasattr(socket, "TCP_KEEPIDLE"):
        idle, interval = probes[socket.TCP_KEEPIDLE], probes[socket.TCP_KEEPINTVL]
        assert idle + interval * probes[socket.TCP_KEEPCNT] <= 30


def test_a_command_time_out_can_be_set() -> None:
    options = connection_options(make_settings(redis={"command_timeout_s": 2.5}).redis)
    assert options["socket_timeout"] == 2.5


def test_the_process_client_is_built_with_them() -> None:
    settings = make_settings(redis={"url": "redis://127.0.0.1:6379/15"})
    kwargs = connect_redis(settings).connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] is None
    assert (
        kwargs["socket_keepalive_options"]
        == connection_options(settings.redis)["socket_keepalive_options"]
    )
