"""An httpx transport whose every connection passes the SSRF guard.

httpcore opens each TCP connection through a *network backend*
(``connect_tcp(host, port)``). :class:`GuardedBackend` wraps the standard one: it
resolves the host itself, checks every address with :mod:`core.tools.web.guard`, then
connects to one of exactly those checked addresses (the IP, not the name). The HTTP layer
above is unchanged: the ``Host`` header and, for https, the TLS server name (SNI) and the
certificate check still use the URL's host name, so virtual hosts and TLS work as usual.

Because the check sits in the connection itself, it covers the first request, every
redirect hop and every new connection of the pool; a name that resolves differently a
second later (DNS rebinding) is checked again at that connection, on the address used.
Pooled keep-alive connections are reused only for the same scheme, host and port.
Environment proxies are ignored (``trust_env=False``): a proxy resolves names itself and
would bypass the check.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from core.tools.web.guard import Policy, resolve_checked


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check, and connect to a checked address; refuse Unix sockets."""

    def __init__(self, policy: Policy, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await resolve_checked(self.policy, host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"looking up {host} took over {timeout} s") from None
        except socket.gaierror as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("Unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` over a connection pool that uses :class:`GuardedBackend`."""

    def __init__(self, policy: Policy, *, limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)
        super().__init__(trust_env=False, limits=limits)
        # httpx 0.28 takes no network backend; its transport sends through the httpcore
        # pool in ``_pool`` (httpx is pinned; tests/unit/test_web_guard.py checks this).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )
