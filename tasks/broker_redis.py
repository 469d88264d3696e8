"""kombu's Redis transports with one Redis client per channel instead of one per operation.

kombu's Redis channel (5.7) builds a new ``redis.Redis`` client for every operation that
is not handed one (``Channel.conn_or_acquire``): every publish (``Channel._put``), every
delivery's unacknowledged bookkeeping (``QoS.append``), every acknowledgement
(``QoS.ack``), every restore. Building one copies redis-py's table of response callbacks
(about 170 entries) and dispatches a pool event: about 145 µs of CPU under load, at least
three per turn message (docs/benchmarks.md). Those clients are all alike: each takes a
connection from the channel's pool for each command and gives it back, and holds nothing
else. So :class:`Channel` builds one and reuses it for as long as the channel keeps the
pool it was built on.

What this keeps, unchanged:

- thread safety: a ``redis.Redis`` client may be shared between threads (its pool hands
  each command a connection under a lock); what is not — pipelines, transactions, locks —
  is still made new for each operation, from the client, as kombu does;
- reconnection: when kombu drops the channel's pools (a lost connection, a fork, the
  channel closed: ``_disconnect_pools``) the client goes with them; the next operation
  builds a new pool, and a client on it, exactly where kombu would;
- the visibility timeout and the restore of unacknowledged messages (``QoS``), TLS, ACL
  users, credential providers and the global key prefix: the client is the one kombu
  builds (``Channel._create_client``), only built once;
- Sentinel: :class:`SentinelChannel` is kombu's, its pool the Sentinel-managed one (a
  failover moves the pool's connections to the new master; the client never held one).

The channel's own long-lived clients — the consuming ``BRPOP`` client and the pub/sub one —
were already built once per channel (``Channel.client``, ``Channel.subclient``) and are
left as they are. :mod:`tasks.broker` makes Celery's connections use these transports.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class _OneClient:
    """The reuse, mixed into kombu's channels (before them in the MRO)."""

    _one_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the channel's BRPOP / pub/sub clients: built once already
            return super()._create_client(asynchronous=True)  # type: ignore[misc]
        pool = self.pool  # type: ignore[attr-defined]  # built here if it was dropped
        client = self._one_client
        if client is None or client.connection_pool is not pool:
            # Two threads may both get here: each builds one, the last one is kept.
            client = self._one_client = super()._create_client()  # type: ignore[misc]
        return client

    def _disconnect_pools(self) -> None:
        self._one_client = None
        super()._disconnect_pools()  # type: ignore[misc]


class Channel(_OneClient, kombu_redis.Channel):
    """kombu's Redis channel, its operations sharing one client."""


class SentinelChannel(_OneClient, kombu_redis.SentinelChannel):
    """kombu's Redis Sentinel channel, its operations sharing one client."""


class Transport(kombu_redis.Transport):
    """kombu's Redis transport (``redis://``, ``rediss://``) with :class:`Channel`."""

    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    """kombu's Redis Sentinel transport (``sentinel://``) with :class:`SentinelChannel`."""

    Channel = SentinelChannel


# kombu's transport → the one here that replaces it.
REPLACES: dict[type, type] = {
    kombu_redis.Transport: Transport,
    kombu_redis.SentinelTransport: SentinelTransport,
}
