"""The Redis client's type, how its connections are made, and the errors it raises,
named for the rooms above the state room so that they need not import ``redis``
(``core.process.wiring`` builds the client). Where Redis is (the url, Sentinel, TLS, the
ACL user) is read by ``core.state.redis_target``; the connections that follow a failover
behind Sentinel are ``core.state.sentinel``.

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import ConnectionError as _ConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as _TimeoutError
from redis.retry import Retry as SyncRetry
from redis.sentinel import Sentinel as SyncSentinel

from core.config_redis import RedisSettings
from core.state.connections import QuickBlockingPool, driver_info, packing
from core.state.redis_target import (
    direct_url,
    security_options,
    sentinel_options,
    target,
    tls_options,
)
from core.state.sentinel import (
    SENTINEL_RETRIES,
    BlockingSentinelPool,
    FollowingConnection,
    FollowingSSLConnection,
    SyncFollowingConnection,
    SyncFollowingSSLConnection,
    retry_backoff,
)

# The asyncio client every state object works on (decode_responses=True).
Client = Redis

# Redis is restarting or unreachable: worth a one-line warning and a retry.
Unreachable = _ConnectionError
# Redis did not answer in time.
TimedOut = _TimeoutError
# Any error the client raised.
StateError = RedisError

_PROBES = 4


def connection_options(settings: RedisSettings) -> dict[str, Any]:
    """redis-py's connection keywords for the process's client.

    No ``socket_timeout`` by default (``redis.command_timeout_s = 0``): redis-py's default
    (5 s) wraps every send in ``asyncio.wait_for`` and every read in a timer, 10-15 % of
    the client's CPU on a turn's round trips. What a time-out is for, a server or link
    that died without closing the connection, is left to TCP, at no cost per command:

    - keepalive probes on an idle connection (one in a blocking read too: XREAD/BRPOP
      carry their own BLOCK time-out, which the server keeps) after ``dead_server_s / 3``
      of silence, ``_PROBES`` of them, to close it by ``dead_server_s``;
    - ``TCP_USER_TIMEOUT`` on a command whose bytes the server's host never acknowledged
      (it is gone, or the link is), closing the connection after ``dead_server_s``.

    Either way the command fails with ``Unreachable`` and the pool's retry takes a new
    connection (a restarted server is reached at once: its host resets the old ones). A
    live server that stopped answering (SIGSTOP, a hung host whose kernel still acks) is
    waited for rather than abandoned. A PING health check is not used: its read would have
    no time-out either.
    """
    dead = settings.dead_server_s
    idle = max(1, dead // 3)
    probes = {
        "TCP_KEEPIDLE": idle,
        "TCP_KEEPINTVL": max(1, (dead - idle) // _PROBES),
        "TCP_KEEPCNT": _PROBES,
        "TCP_USER_TIMEOUT": dead * 1000,  # milliseconds (Linux)
    }
    return {
        "socket_timeout": settings.command_timeout_s or None,
        "socket_connect_timeout": settings.connect_timeout_s,
        "socket_keepalive": True,
        "socket_keepalive_options": {
            getattr(socket, name): value
            for name, value in probes.items()
            if hasattr(socket, name)  # only what the platform has
        },
    }


def async_client(settings: RedisSettings, *, retry: Retry | None = None, **options: Any) -> Redis:
    """The asyncio client of ``settings`` (TLS, ACL user, Sentinel), replies decoded.
    ``options``: redis-py pool keywords (``max_connections``, ``timeout``, socket ones).
    Its connections pack commands with hiredis (``core.state.connections``)."""
    where = target(settings)
    security = security_options(settings, where)
    options.setdefault("driver_info", driver_info())
    if not where.sentinels:
        pool = QuickBlockingPool.from_url(
            direct_url(where), decode_responses=True, retry=retry, **security, **options
        )
        pool.connection_class = packing(pool.connection_class)
        return Redis(connection_pool=pool)
    sentinel = Sentinel(list(where.sentinels), sentinel_kwargs=sentinel_options(settings))
    client: Redis = sentinel.master_for(
        where.service_name,
        connection_pool_class=BlockingSentinelPool,
        connection_class=FollowingSSLConnection if where.tls else FollowingConnection,
        db=where.db,
        decode_responses=True,
        retry=retry,
        ssl=where.tls,
        **security,
        **options,
    )
    client.connection_pool.connection_class = packing(client.connection_pool.connection_class)
    return client


def sync_client(settings: RedisSettings, **options: Any) -> SyncRedis:
    """The synchronous client of ``settings`` (Celery's threads, the ledger), replies
    decoded; behind Sentinel it follows the primary as the asyncio one does."""
    where = target(settings)
    security = security_options(settings, where)
    options.setdefault("driver_info", driver_info())
    if not where.sentinels:
        return SyncRedis.from_url(direct_url(where), decode_responses=True, **security, **options)
    sentinel = SyncSentinel(list(where.sentinels), sentinel_kwargs=sentinel_options(settings))
    options.setdefault("retry", SyncRetry(retry_backoff(), SENTINEL_RETRIES))
    client: SyncRedis = sentinel.master_for(
        where.service_name,
        db=where.db,
        decode_responses=True,
        connection_class=SyncFollowingSSLConnection if where.tls else SyncFollowingConnection,
        **security,
        **options,
    )
    return client


def broker_settings(settings: RedisSettings, broker_url: str) -> RedisSettings:
    """The Redis settings Celery's broker is reached with: ``settings`` (``broker_url``
    empty: the broker is the state's Redis), or a separate broker's at ``broker_url`` —
    any url :func:`target` reads (``redis://``, ``rediss://``, ``redis+sentinel://``,
    kombu's ``sentinel://h:p;sentinel://h:p`` with ``service_name``), with the same TLS
    files and the same ACL user from the environment."""
    if not broker_url:
        return settings
    return settings.model_copy(update={"url": broker_url, "sentinels": ()})


@dataclass(frozen=True)
class Broker:
    """Celery's broker connection for the same Redis: kombu's url (``sentinel://…`` with
    ``master_name`` behind Sentinel), its extra transport options, TLS and the ACL user."""

    url: str
    transport_options: dict[str, Any]
    use_ssl: dict[str, Any] | None
    user: str | None
    password: str | None


def broker(settings: RedisSettings) -> Broker:
    where = target(settings)
    use_ssl = tls_options(settings) if where.tls else None
    if not where.sentinels:
        return Broker(direct_url(where), {}, use_ssl, where.username, settings.password())
    url = ";".join(f"sentinel://{h}:{p}" for h, p in where.sentinels) + f"/{where.db}"
    options = {"master_name": where.service_name, "sentinel_kwargs": sentinel_options(settings)}
    return Broker(url, options, use_ssl, where.username, settings.password())


__all__ = [
    "Broker",
    "Client",
    "StateError",
    "TimedOut",
    "Unreachable",
    "async_client",
    "broker",
    "broker_settings",
    "connection_options",
    "sync_client",
]
