"""The Redis client's type, how its connections are made, and the errors it raises,
named for the rooms above the state room so that they need not import ``redis``
(``core.process.wiring`` builds the client).

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from redis import Redis as SyncRedis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.connection import SSLConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.backoff import ExponentialWithJitterBackoff
from redis.connection import SSLConnection as SyncSSLConnection
from redis.exceptions import ConnectionError as _ConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as _TimeoutError
from redis.retry import Retry as SyncRetry
from redis.sentinel import Sentinel as SyncSentinel
from redis.sentinel import SentinelManagedConnection as SyncSentinelManagedConnection

from core.config_redis import RedisSettings
from core.errors import ConfigError

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


# --- Where Redis is: one primary (redis://, rediss://) or the primary a set of Sentinels
# names (redis+sentinel://h:p,h:p/service/db, kombu's sentinel://h:p;sentinel://h:p),
# with TLS and an ACL user whose name and password come from the environment.

_SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel", "sentinel")
# A Sentinel asked where the primary is answers within this (a dead one is skipped).
_SENTINEL_TIMEOUT_S = 1.0
# Behind Sentinel a command retries through the failover: down-after-milliseconds plus the
# election, ~30 s by Sentinel's defaults (a direct client's ~6 s is for a restart).
SENTINEL_RETRIES = 20


@dataclass(frozen=True)
class Target:
    """Where a process's Redis is, as the settings say: ``sentinels`` empty for a direct
    ``url``; TLS on or off; the ACL user (from the environment, or the url's)."""

    url: str
    sentinels: tuple[tuple[str, int], ...]
    service_name: str
    db: int
    tls: bool
    username: str | None

    def describe(self) -> str:
        """Which Redis in words: the url (password hidden), TLS, the user, the Sentinel
        service; never a password."""
        user = f"user {self.username or 'default'}"
        tls = "TLS on" if self.tls else "TLS off"
        service = f"Sentinel service '{self.service_name}', " if self.sentinels else ""
        return f"{shown(self.url)} ({service}{tls}, {user})"


def target(settings: RedisSettings) -> Target:
    """Parse ``redis.url`` (and ``sentinels``/``service_name``); raises ConfigError."""
    url = settings.url
    scheme = url.split("://", 1)[0].lower()
    username = settings.username()
    if scheme not in _SENTINEL_SCHEMES:
        parts = urlsplit(url)
        db = _db(parts.path.lstrip("/")) if scheme != "unix" else 0
        tls = scheme == "rediss" or settings.tls
        return Target(url, (), "", db, tls, username or parts.username or None)
    if scheme == "sentinel":  # kombu's: sentinel://h:p;sentinel://h:p[/db]
        addresses = [u.split("://", 1)[-1] for u in url.split(";") if u.strip()]
        service, db_text = settings.service_name, ""
        if "/" in addresses[-1]:
            addresses[-1], db_text = addresses[-1].split("/", 1)
        tls = settings.tls
    else:  # redis+sentinel://[user@]h:p,h:p/service[/db]
        rest = url.split("://", 1)[1]
        netloc, _, path = rest.partition("/")
        if "@" in netloc:
            user, netloc = netloc.rsplit("@", 1)
            username = username or user.split(":", 1)[0] or None
        addresses = netloc.split(",")
        service, _, db_text = path.partition("/")
        service = service or settings.service_name
        tls = scheme == "rediss+sentinel" or settings.tls
    if not service:
        raise ConfigError(
            f"redis.url names Sentinels ({shown(url)}) but no service",
            hint='set redis.service_name (the name the Sentinels watch, "mymaster" in '
            "sentinel.conf) or write it in the url: redis+sentinel://host:port/NAME/0",
        )
    hosts = tuple(_host_port(a.split("@")[-1], 26379) for a in addresses if a.strip())
    return Target(url, hosts, service, _db(db_text.strip("/")), tls, username)


def _host_port(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    try:
        return host, int(port) if port else default_port
    except ValueError as exc:
        raise ConfigError(
            f"redis: '{text}' is not a host:port", hint='write Sentinels as "host:26379"'
        ) from exc


def _db(text: str) -> int:
    try:
        return int(text) if text else 0
    except ValueError as exc:
        raise ConfigError(f"redis.url: '{text}' is not a database number") from exc


def shown(url: str) -> str:
    """``url`` with any password hidden."""
    head, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if "@" not in netloc:
        return url
    credentials, host = netloc.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    hidden = f"{user}:***" if ":" in credentials else user
    return f"{head}{sep}{hidden}@{host}{slash}{path}"


def security_options(settings: RedisSettings, where: Target) -> dict[str, Any]:
    """redis-py's keywords for the ACL user and TLS: the password only from the
    environment (a url's, given in ``CARAMBA_REDIS__URL``, is kept when none is set)."""
    options: dict[str, Any] = {}
    if where.username:
        options["username"] = where.username
    if settings.password():
        options["password"] = settings.password()
    if where.tls:
        options.update(tls_options(settings))
    return options


def tls_options(settings: RedisSettings) -> dict[str, Any]:
    """The certificate keywords (redis-py's and kombu's ``broker_use_ssl`` alike)."""
    options: dict[str, Any] = {"ssl_cert_reqs": "required"}
    for key, path in (
        ("ssl_ca_certs", settings.tls_ca_file),
        ("ssl_certfile", settings.tls_cert_file),
        ("ssl_keyfile", settings.tls_key_file),
    ):
        if path:
            if not os.path.isfile(path):
                raise ConfigError(
                    f"redis: the TLS file {path} does not exist",
                    hint="set redis.tls_ca_file / tls_cert_file / tls_key_file to readable files",
                )
            options[key] = path
    return options


def sentinel_options(settings: RedisSettings) -> dict[str, Any]:
    """How the Sentinels themselves are spoken to (their own password, TLS, a short
    time-out so a dead one is skipped)."""
    options: dict[str, Any] = {
        "socket_timeout": _SENTINEL_TIMEOUT_S,
        "socket_connect_timeout": _SENTINEL_TIMEOUT_S,
    }
    if settings.sentinel_password():
        options["password"] = settings.sentinel_password()
    if settings.sentinel_tls:
        options["ssl"] = True
        options.update(tls_options(settings))
    return options


def _direct_url(where: Target) -> str:
    if where.tls and where.url.startswith("redis://"):
        return "rediss://" + where.url[len("redis://") :]
    return where.url


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The primary's pool behind Sentinel that waits for a free connection at the limit,
    as the direct client's does (hundreds of turns share one process's client). Closed
    (the client's ``aclose``), it closes its connections to the Sentinels too."""

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:  # a close; a new primary's disconnect keeps the Sentinels
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.aclose()


# redis-py 8.1's Sentinel connections ask the Sentinels where the primary is only when the
# pool hands one out: a command retried on a connection that broke (its send reconnects
# through ``connect_check_health``) dialled the dead primary again until its retries ran
# out, and never reached the new one. Here every reconnect asks the Sentinels first.
class _FollowingConnection(SentinelManagedConnection):
    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect and not self.is_connected:
            await self.connect()  # the Sentinels' primary, with the retry's back-off
        else:
            await super().connect_check_health(check_health, retry_socket_connect)


class _FollowingSSLConnection(_FollowingConnection, SSLConnection):
    pass


class _SyncFollowingConnection(SyncSentinelManagedConnection):
    def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect and self._sock is None:
            self.connect()
        else:
            super().connect_check_health(check_health, retry_socket_connect)


class _SyncFollowingSSLConnection(_SyncFollowingConnection, SyncSSLConnection):
    pass


def async_client(settings: RedisSettings, *, retry: Retry | None = None, **options: Any) -> Redis:
    """The asyncio client of ``settings`` (TLS, ACL user, Sentinel), replies decoded.
    ``options``: redis-py pool keywords (``max_connections``, ``timeout``, socket ones)."""
    where = target(settings)
    security = security_options(settings, where)
    if not where.sentinels:
        pool = BlockingConnectionPool.from_url(
            _direct_url(where), decode_responses=True, retry=retry, **security, **options
        )
        return Redis(connection_pool=pool)
    sentinel = Sentinel(list(where.sentinels), sentinel_kwargs=sentinel_options(settings))
    return sentinel.master_for(
        where.service_name,
        connection_pool_class=_BlockingSentinelPool,
        connection_class=_FollowingSSLConnection if where.tls else _FollowingConnection,
        db=where.db,
        decode_responses=True,
        retry=retry,
        ssl=where.tls,
        **security,
        **options,
    )


def sync_client(settings: RedisSettings, **options: Any) -> SyncRedis:
    """The synchronous client of ``settings`` (Celery's threads, the ledger), replies
    decoded; behind Sentinel it follows the primary as the asyncio one does."""
    where = target(settings)
    security = security_options(settings, where)
    if not where.sentinels:
        return SyncRedis.from_url(_direct_url(where), decode_responses=True, **security, **options)
    sentinel = SyncSentinel(list(where.sentinels), sentinel_kwargs=sentinel_options(settings))
    options.setdefault("retry", SyncRetry(ExponentialWithJitterBackoff(0.1, 2.0), SENTINEL_RETRIES))
    client: SyncRedis = sentinel.master_for(
        where.service_name,
        db=where.db,
        decode_responses=True,
        connection_class=_SyncFollowingSSLConnection if where.tls else _SyncFollowingConnection,
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
        return Broker(_direct_url(where), {}, use_ssl, where.username, settings.password())
    url = ";".join(f"sentinel://{h}:{p}" for h, p in where.sentinels) + f"/{where.db}"
    options = {"master_name": where.service_name, "sentinel_kwargs": sentinel_options(settings)}
    return Broker(url, options, use_ssl, where.username, settings.password())


__all__ = [
    "Broker",
    "Client",
    "StateError",
    "Target",
    "TimedOut",
    "Unreachable",
    "async_client",
    "broker",
    "broker_settings",
    "connection_options",
    "shown",
    "sync_client",
    "target",
]
