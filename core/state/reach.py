"""Is the Redis of ``redis.url`` there? Asked once when a process starts, so that a Redis
that is not running is said in one line with what to do, at once, instead of as a
traceback after the client's retries; and what ``caramba doctor`` asks a Redis (its
version, a call keeper's heartbeat) on a client of its own, closed at once.

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    NoPermissionError,
    RedisError,
    ResponseError,
)
from redis.retry import Retry

from core.config_redis import RedisSettings
from core.errors import ConfigError
from core.state.client import async_client
from core.state.keeper_channel import KeeperChannel
from core.state.keys import Keys
from core.state.redis_target import target

_WHERE = "CARAMBA_REDIS__URL (or [redis] url in config.toml)"


def shown_url(url: str) -> str:
    """``url`` with its password hidden."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def _one_shot(where: RedisSettings | str, timeout_s: float, *, decode: bool = False) -> Redis:
    """A client of its own for one question, no retries: ``where`` a url, or the settings
    (TLS, the ACL user, Sentinel; core/state/client.py)."""
    options: dict[str, Any] = {
        "socket_connect_timeout": timeout_s,
        "socket_timeout": timeout_s,
        "retry": Retry(NoBackoff(), 0),
    }
    if isinstance(where, str):
        return Redis.from_url(where, decode_responses=decode, **options)
    return async_client(where, **options)


def describe_redis(settings: RedisSettings) -> str:
    """Which Redis the settings reach (url without password, TLS, user, Sentinel
    service); raises ConfigError when they do not parse."""
    return target(settings).describe()


def _shown(where: RedisSettings | str) -> str:
    """The url (password hidden), with TLS, user and Sentinel service said when any is
    set (a plain redis:// url is said as it is)."""
    if isinstance(where, str):
        return shown_url(where)
    found = target(where)
    if found.sentinels or found.tls or found.username:
        return found.describe()
    return shown_url(where.url)


async def redis_problem(where: RedisSettings | str, timeout_s: float = 2.0) -> ConfigError | None:
    """None when the Redis of ``where`` (a url, or ``[redis]``) answers a PING within
    ``timeout_s``; else the error to say (where it was tried, why it failed, what to do)."""
    try:
        client = _one_shot(where, timeout_s)
    except ConfigError as exc:
        return exc
    try:
        await client.ping()
    except AuthenticationError as exc:
        return ConfigError(
            f"Redis at {_shown(where)} refused the login ({exc})",
            hint="put the right user name and password in CARAMBA_REDIS_USERNAME and "
            "CARAMBA_REDIS_PASSWORD",
        )
    except (AuthorizationError, NoPermissionError) as exc:
        return ConfigError(
            f"Redis at {_shown(where)} refused a command to this user ({exc})",
            hint="give the ACL user the commands docs/redis.md lists, on ~PREFIX:*",
        )
    except (RedisError, OSError, TimeoutError) as exc:
        reason = _reason(exc)
        if "CERTIFICATE_VERIFY_FAILED" in reason or "SSL" in reason:
            return ConfigError(
                f"Redis at {_shown(where)} did not pass the TLS check ({reason})",
                hint="set redis.tls_ca_file (CARAMBA_REDIS__TLS_CA_FILE) to the CA bundle "
                "that signed the server's certificate, and check its host name",
            )
        hint = f"start it (redis-server), or point {_WHERE} at where it runs"
        if "reset by peer" in reason:
            hint += " (a server that speaks TLS is reached with rediss://)"
        return ConfigError(f"Redis is not reachable at {_shown(where)} ({reason})", hint=hint)
    finally:
        await client.aclose()
    return None


def _reason(exc: BaseException) -> str:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "Connect call failed" in str(seen):
            return "connection refused"
        if isinstance(seen, socket.gaierror) or "Name or service not known" in str(seen):
            return "unknown host"
        if isinstance(seen, TimeoutError):
            return "no answer"
        seen = seen.__cause__ or seen.__context__
    return str(exc).strip() or type(exc).__name__


async def redis_version(where: RedisSettings | str, timeout_s: float = 2.0) -> str:
    """The version the Redis of ``where`` reports: ``HELLO``'s (which the ACL user of
    docs/redis-acl.md may send), else ``INFO server``'s; raises if it does not answer."""
    client = _one_shot(where, timeout_s)
    try:
        try:
            hello: Any = await client.execute_command("HELLO")
        except ResponseError:  # older than Redis 6
            info = await client.info("server")
            return str(info.get("redis_version", "?"))
    finally:
        await client.aclose()
    found = {_text(k): v for k, v in dict(hello).items()} if isinstance(hello, dict) else {}
    return _text(found.get("version", "?"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def keeper_alive(
    where: RedisSettings | str, keys: Keys, timeout_s: float = 2.0
) -> str | None:
    """The name of a call keeper whose heartbeat is on in the Redis of ``where``, if any;
    raises if Redis does not answer."""
    client = _one_shot(where, timeout_s, decode=True)
    try:
        return await KeeperChannel(client, keys).alive()
    finally:
        await client.aclose()
