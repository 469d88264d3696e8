"""A run's workspace files in Redis: two hashes per run, ``keys.files`` (path → bytes,
base64, since the client decodes replies as text) and ``keys.files_meta`` (path → the
file's info as JSON), written together and kept ``ttl`` seconds after the last write.

A write checks the caller's caps against the run's current files and writes both hashes
in one transaction, WATCHing the metadata, so two agents writing at once cannot together
break a cap. Part of the state room, the only room that speaks Redis commands
(``core.state``); it may call the Redis client and ``core.state.keys``. What a file's
info holds lives above (``core.workspace``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import WatchError

from core.state.keys import Keys

_CAS_ATTEMPTS = 20


class FileHashes:
    """The runs' files and their infos, on a Redis client and keys."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys

    async def infos(self, run_id: str) -> list[str]:
        """Every file's info (JSON), in no order."""
        found: Any = await self.redis.hvals(self.keys.files_meta(run_id))
        return list(found)

    async def info(self, run_id: str, path: str) -> str | None:
        found: Any = await self.redis.hget(self.keys.files_meta(run_id), path)
        return found

    async def content(self, run_id: str, path: str) -> str | None:
        """The file's bytes, base64."""
        found: Any = await self.redis.hget(self.keys.files(run_id), path)
        return found

    async def write(
        self,
        run_id: str,
        path: str,
        content: str,
        info: str,
        *,
        check: Callable[[list[str]], None],
        ttl_s: int,
    ) -> bool:
        """Write a file (``content`` base64, ``info`` JSON) once ``check`` accepted the
        run's current infos (it raises to refuse); False when the files kept changing."""
        meta, files = self.keys.files_meta(run_id), self.keys.files(run_id)
        for _ in range(_CAS_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(meta)
                    current: Any = await pipe.hvals(meta)
                    check(list(current))
                    pipe.multi()
                    pipe.hset(files, path, content)
                    pipe.hset(meta, path, info)
                    pipe.expire(files, ttl_s)
                    pipe.expire(meta, ttl_s)
                    await pipe.execute()
                    return True
                except WatchError:
                    continue
        return False

    async def delete(self, run_id: str, path: str) -> bool:
        """Remove a file and its info in one transaction; True if there was one."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.files(run_id), path)
            pipe.hdel(self.keys.files_meta(run_id), path)
            removed, _ = await pipe.execute()
        return bool(removed)

    async def clear(self, run_id: str) -> None:
        await self.redis.delete(self.keys.files(run_id), self.keys.files_meta(run_id))
