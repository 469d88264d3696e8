"""Celery's broker connections, on the Redis transports of :mod:`tasks.broker_redis`.

Celery builds every broker connection of an app through its ``amqp.Connection`` class:
the worker's consumer, the connection and producer pools every publish goes through.
:class:`BrokerAMQP` (given to ``Celery(amqp=...)`` by :func:`tasks.app.make_app`) makes
that class :class:`BrokerConnection`, whose transport is kombu's own unless it is kombu's
Redis or Redis Sentinel transport, which it swaps for the subclass that reuses one Redis
client per channel; so do the connections of its pools (kombu builds those as its own
``PooledConnection``: :class:`BrokerConnectionPool` builds ours instead). The url keeps its
scheme (``redis://``, ``rediss://``, ``sentinel://``), so everything kombu derives from it
stays kombu's: the TLS default of ``rediss://``, the Sentinel alternates, and the switch to
the next alternate after a connection error (``Connection.switch`` reads the scheme again;
the swap applies to it all the same).
"""

from __future__ import annotations

import functools
from typing import Any

from celery.app.amqp import AMQP
from kombu import Connection
from kombu.connection import ConnectionPool, PooledConnection


@functools.cache  # asked on every publish (kombu's ``recoverable_connection_errors``)
def lean_transport(transport_cls: type) -> type:
    """``transport_cls``, or the :mod:`tasks.broker_redis` transport that replaces it."""
    if transport_cls.__module__ != "kombu.transport.redis":
        return transport_cls
    from tasks.broker_redis import REPLACES  # imports redis: only with a Redis broker

    return REPLACES.get(transport_cls, transport_cls)


class _LeanTransport:
    """A kombu connection whose Redis transport is :mod:`tasks.broker_redis`'s."""

    def get_transport_cls(self) -> type:
        return lean_transport(super().get_transport_cls())  # type: ignore[misc]

    def __eqhash__(self) -> Any:
        # kombu's pools are shared per process and keyed by connection: never hand out
        # a pool of kombu's own connections for one of ours (or the other way round).
        return (_LeanTransport, super().__eqhash__())  # type: ignore[misc]


class BrokerConnection(_LeanTransport, Connection):
    """kombu's connection; a Redis broker's transport reuses its Redis clients."""

    def Pool(self, limit: int | None = None, **kwargs: Any) -> ConnectionPool:
        return BrokerConnectionPool(self, limit=limit, **kwargs)


class BrokerPooledConnection(_LeanTransport, PooledConnection):
    """kombu's pooled connection, with the transport of :class:`BrokerConnection`."""


class BrokerConnectionPool(ConnectionPool):
    """kombu's pool of connections, of :class:`BrokerPooledConnection`."""

    def new(self) -> BrokerPooledConnection:
        # As kombu's ConnectionPool.new, with our class.
        return BrokerPooledConnection(self, **dict(self.connection._info(resolve=False)))


class BrokerAMQP(AMQP):
    """Celery's AMQP helpers, with :class:`BrokerConnection` for every connection."""

    Connection = BrokerConnection
    BrokerConnection = BrokerConnection


def open_publishing(app: Any, queue: str, connections: int) -> None:
    """What publishing first does on each connection it opens (connect, the channel's
    ping, the queue declared, redis-py's version looked up: a few ms of CPU each, ~17 the
    very first time), done for ``connections`` of the app's pooled producers at once — as
    many as publish at a time — so that a worker pays it as it starts, not in its turns."""
    pool = app.producer_pool
    declared = app.amqp.queues[queue]
    producers: list[Any] = []
    try:
        for _ in range(connections):
            producer = pool.acquire(block=True)
            producers.append(producer)
            producer.maybe_declare(declared)
    finally:
        for producer in producers:
            producer.release()
