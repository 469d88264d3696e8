"""What a Redis connection costs the client, cut where redis-py 8.1 spends for nothing:

- the asyncio connection packs a command in Python, joining the whole buffer again for
  each argument (a turn's save, 60-90 arguments and 7-12 KB, took 6 times what
  ``hiredis.pack_command`` takes): :func:`packing` makes a connection class pack with
  hiredis, and any argument hiredis does not take (a bytearray, an enum…) goes to
  redis-py's own packer, so what is sent, and every error, is redis-py's;
- every new connection looks redis-py's version up in the installed packages' metadata
  (``importlib.metadata``, 5-10 ms of CPU) for ``CLIENT SETINFO``: :func:`driver_info`
  looks it up once per process and the connections share it (a pool grows to a cohort's
  concurrency while it runs);
- a command takes a connection from the blocking pool and gives it back through an
  ``asyncio.Condition``, a time-out's timer, the pool's lock, an event dispatch and
  metrics calls (about 40 % of a round trip's client CPU): :class:`QuickPool` takes a
  free connection and gives it back directly when nothing else needs doing — the same
  health check of the connection before use, the same reconnect, and redis-py's own way
  whenever a command waits for a connection, the pool is being re-authenticated or is in
  maintenance (redis-py's OpenTelemetry metrics, which this project does not turn on, do
  not see these).

Part of the state room (``core.state``); ``core.state.client`` builds the clients with
them."""

from __future__ import annotations

from functools import cache
from typing import Any

import hiredis
from redis.asyncio import BlockingConnectionPool
from redis.driver_info import DriverInfo
from redis.utils import get_lib_version


@cache
def driver_info() -> DriverInfo:
    """redis-py's name and version for ``CLIENT SETINFO``, looked up once."""
    return DriverInfo(lib_version=get_lib_version())


class HiredisPacking:
    """A connection mixin: commands packed by hiredis (C) when the client encodes as
    hiredis does (UTF-8, strict), by redis-py otherwise."""

    encoder: Any

    def pack_command(self, *args: Any) -> list[bytes]:
        encoder = self.encoder
        if encoder.encoding not in ("utf-8", "utf8") or encoder.encoding_errors != "strict":
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]
        # A command named in one string ("XGROUP CREATE") is sent as its words, as
        # redis-py's packer does.
        first = args[0]
        if isinstance(first, str):
            args = (*first.encode().split(), *args[1:])
        elif isinstance(first, bytes) and b" " in first:
            args = (*first.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:  # an argument hiredis does not take: redis-py's way, its errors
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]


class QuickPool:
    """A mixin for redis-py's asyncio ``BlockingConnectionPool``: a free connection taken
    and given back without the pool's waiting machinery when no one waits."""

    _available_connections: list[Any]
    _in_use_connections: set[Any]
    _condition: Any
    _lock: Any
    _in_maintenance: bool

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> Any:
        available = self._available_connections
        if not available or self._in_maintenance or self._lock.locked():
            return await super().get_connection()  # type: ignore[misc]  # waits, or makes one
        connection = available.pop()
        self._in_use_connections.add(connection)
        try:
            await self.ensure_connection(connection)  # type: ignore[attr-defined]
        except BaseException:
            await self.release(connection)
            raise
        return connection

    async def release(self, connection: Any) -> None:
        if (
            getattr(self._condition, "_waiters", True)  # someone waits: notify them
            or self._in_maintenance
            or self._lock.locked()
            or connection.should_reconnect()
            or getattr(connection, "_re_auth_token", True) is not None
        ):
            await super().release(connection)  # type: ignore[misc]
            return
        self._in_use_connections.remove(connection)
        self._available_connections.append(connection)


class QuickBlockingPool(QuickPool, BlockingConnectionPool):
    """The direct client's pool."""


_PACKING: dict[type[Any], type[Any]] = {}


def packing(connection_class: type[Any]) -> type[Any]:
    """``connection_class`` packing its commands with hiredis (one class for each)."""
    if issubclass(connection_class, HiredisPacking):
        return connection_class
    made = _PACKING.get(connection_class)
    if made is None:
        name = connection_class.__name__
        made = _PACKING[connection_class] = type(name, (HiredisPacking, connection_class), {})
    return made
