"""Bounding the writes a Redis failover can lose (``redis.replicas_to_ack``).

Redis replicates asynchronously: a write the primary acknowledged but had not yet sent to a
replica is lost when that primary dies and Sentinel promotes the replica. For the writes
that must survive (a turn's commit, ``core.state.turns``; a person's decision on a
proposal, ``Store.update_run(durable=True)``; a tool call's approval,
``core.state.approvals``; an outbox entry, ``bots.chat.store``) the process asks, after
the write, that ``replicas_to_ack`` replicas have it: ``WAIT numreplicas timeout``, up to
``replicas_ack_timeout_ms``.

WAIT counts the writes of the connection it is sent on, and a pooled client may send it on
another one; so it rides in one pipeline after a one-byte write of its own (the
``replicated`` key, with a short expiry): the replication stream is ordered, so a replica
that has that write has every write acknowledged before it, the commit's included. One
round trip, and only when ``replicas_to_ack > 0``: off (the default), :func:`replicated`
returns at once without touching Redis.

A WAIT that times out (the replicas are behind, or gone) does not undo the write nor fail
the turn: it is logged (once a minute at most) and counted, and the turn goes on. What a
run does when it finds its state older than it expected after a failover is in
docs/redis.md (the turn's save token and seq: ``core.state.turn_cas``).

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass

from redis.asyncio import Redis

from core.state.keys import Keys

log = logging.getLogger(__name__)

# The marker write's expiry: it only needs to reach the replicas.
_MARKER_TTL_MS = 60_000
_WARN_EVERY_S = 60.0


@dataclass
class _Wanted:
    replicas: int
    timeout_ms: int
    short: int = 0  # WAITs answered by fewer replicas than wanted
    warned_at: float = 0.0


_wanted: weakref.WeakKeyDictionary[Redis, _Wanted] = weakref.WeakKeyDictionary()


def require_replicas(client: Redis, replicas: int, timeout_ms: int) -> None:
    """Writes made through ``client`` that call :func:`replicated` wait for ``replicas``
    replicas (0: they do not wait)."""
    if replicas > 0:
        _wanted[client] = _Wanted(replicas, timeout_ms)
    else:
        _wanted.pop(client, None)


def short_acks(client: Redis) -> int:
    """How many WAITs on ``client`` were answered by fewer replicas than wanted."""
    wanted = _wanted.get(client)
    return wanted.short if wanted is not None else 0


async def replicated(client: Redis, keys: Keys) -> int | None:
    """After a write that must survive a failover: wait until the wanted replicas have it.
    The number of replicas that acknowledged it, or None when nothing is wanted."""
    wanted = _wanted.get(client)
    if wanted is None:
        return None
    async with client.pipeline(transaction=False) as pipe:
        pipe.set(keys.replicated(), "1", px=_MARKER_TTL_MS)
        pipe.execute_command("WAIT", wanted.replicas, wanted.timeout_ms)
        _, acked = await pipe.execute()
    count = int(acked)
    if count < wanted.replicas:
        wanted.short += 1
        now = time.monotonic()
        if now - wanted.warned_at >= _WARN_EVERY_S:
            wanted.warned_at = now
            log.warning(
                "Redis: a write reached %d of the %d replicas wanted within %d ms "
                "(redis.replicas_to_ack); a failover now could lose it (%d such writes)",
                count,
                wanted.replicas,
                wanted.timeout_ms,
                wanted.short,
            )
    return count
