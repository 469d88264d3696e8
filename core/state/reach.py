"""Is the Redis of ``redis.url`` there? Asked once when a process starts, so that a Redis
that is not running is said in one line with what to do, at once, instead of as a
traceback after the client's retries; and what ``caramba doctor`` asks a Redis (its
version, a call keeper's heartbeat) on a client of its own, closed at once.

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, RedisError
from redis.retry import Retry

from core.errors import ConfigError
from core.state.keeper_channel import KeeperChannel
from core.state.keys import Keys

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


async def redis_problem(url: str, timeout_s: float = 2.0) -> ConfigError | None:
    """None when the Redis at ``url`` answers a PING within ``timeout_s``; else the error
    to say (where it was tried, why it failed, what to do)."""
    client = Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        await client.ping()
    except AuthenticationError as exc:
        return ConfigError(
            f"Redis at {shown_url(url)} refused the login ({exc})",
            hint=f"put the right password in {_WHERE}",
        )
    except (RedisError, OSError, TimeoutError) as exc:
        return ConfigError(
            f"Redis is not reachable at {shown_url(url)} ({_reason(exc)})",
            hint=f"start it (redis-server), or point {_WHERE} at where it runs",
        )
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


async def redis_version(url: str, timeout_s: float = 2.0) -> str:
    """The version the Redis at ``url`` reports (``INFO server``); raises if it does
    not answer."""
    client = Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        info = await client.info("server")
    finally:
        await client.aclose()
    return str(info.get("redis_version", "?"))


async def keeper_alive(url: str, keys: Keys, timeout_s: float = 2.0) -> str | None:
    """The name of a call keeper whose heartbeat is on in the Redis at ``url``, if any;
    raises if Redis does not answer."""
    client = Redis.from_url(
        url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s, decode_responses=True
    )
    try:
        return await KeeperChannel(client, keys).alive()
    finally:
        await client.aclose()
