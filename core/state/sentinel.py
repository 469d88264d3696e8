"""The connections and the pool a client behind Sentinel uses: every reconnect asks the
Sentinels where the primary is (a failover is followed within the command's retries), and
the pool waits for a free connection at its limit as the direct client's does.

Part of the state room (``core.state``); ``core.state.client`` builds the clients."""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool
from redis.asyncio.connection import SSLConnection
from redis.asyncio.sentinel import SentinelConnectionPool, SentinelManagedConnection
from redis.backoff import ExponentialWithJitterBackoff
from redis.connection import SSLConnection as SyncSSLConnection
from redis.sentinel import SentinelManagedConnection as SyncSentinelManagedConnection

from core.state.connections import QuickPool

# Behind Sentinel a command retries through the failover: down-after-milliseconds plus the
# election, ~30 s by Sentinel's defaults (a direct client's ~6 s is for a restart). With
# :func:`retry_backoff` 36 tries wait about 32 s in all on average.
SENTINEL_RETRIES = 36


def retry_backoff() -> ExponentialWithJitterBackoff:
    """The back-off between a command's tries, asyncio and synchronous clients alike: from
    0.1 s, doubling, at most 2 s (with jitter: about 1 s a try once past the first few)."""
    return ExponentialWithJitterBackoff(base=0.1, cap=2.0)


class BlockingSentinelPool(QuickPool, SentinelConnectionPool, BlockingConnectionPool):
    """The primary's pool behind Sentinel that waits for a free connection at the limit,
    as the direct client's does (hundreds of turns share one process's client; a free
    one taken quickly, ``core.state.connections.QuickPool``). Closed (the client's
    ``aclose``), it closes its connections to the Sentinels too."""

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:  # a close; a new primary's disconnect keeps the Sentinels
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.aclose()


# redis-py 8.1's Sentinel connections ask the Sentinels where the primary is only when the
# pool hands one out: a command retried on a connection that broke (its send reconnects
# through ``connect_check_health``) dialled the dead primary again until its retries ran
# out, and never reached the new one. Here every reconnect asks the Sentinels first.
class FollowingConnection(SentinelManagedConnection):
    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect and not self.is_connected:
            await self.connect()  # the Sentinels' primary, with the retry's back-off
        else:
            await super().connect_check_health(check_health, retry_socket_connect)


class FollowingSSLConnection(FollowingConnection, SSLConnection):
    pass


class SyncFollowingConnection(SyncSentinelManagedConnection):
    def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect and self._sock is None:
            self.connect()
        else:
            super().connect_check_health(check_health, retry_socket_connect)


class SyncFollowingSSLConnection(SyncFollowingConnection, SyncSSLConnection):
    pass
