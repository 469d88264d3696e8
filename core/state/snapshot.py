"""Keys copied out of Redis and back: embedded mode keeps its library's keys in a file
between processes (``core.process.embedded_library``), as ``{key: (type, value)}``.

Part of the state room, the only room that speaks Redis commands (``core.state``); it may
call the Redis client only. The store offers it as ``store.dump_keys`` and
``store.restore_keys``."""

from __future__ import annotations

import logging
from typing import Any

from redis.asyncio import Redis

log = logging.getLogger(__name__)

Saved = dict[str, tuple[str, Any]]


async def dump(redis: Redis, pattern: str) -> Saved:
    """Every key matching ``pattern`` that does not expire (a lock or a claim is not
    kept): hashes, sets and strings."""
    keys: Saved = {}
    async for key in redis.scan_iter(match=pattern, count=500):
        if await redis.ttl(key) >= 0:
            continue
        kind = await redis.type(key)
        if kind == "hash":
            keys[key] = ("hash", await redis.hgetall(key))
        elif kind == "set":
            keys[key] = ("set", sorted(await redis.smembers(key)))  # type: ignore[type-var]
        elif kind == "string":
            keys[key] = ("string", await redis.get(key))
        else:
            log.warning("not keeping key %s of type %s", key, kind)
    return keys


async def restore(redis: Redis, saved: Saved) -> int:
    """Put ``saved`` keys back (each replaced whole), in one transaction; how many."""
    async with redis.pipeline(transaction=True) as pipe:
        for key, (kind, value) in saved.items():
            pipe.delete(key)
            if kind == "hash" and value:
                pipe.hset(key, mapping=value)
            elif kind == "set" and value:
                pipe.sadd(key, *value)
            elif kind == "string":
                pipe.set(key, value)
        await pipe.execute()
    return len(saved)
