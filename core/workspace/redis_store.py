"""The workspace in Redis: every worker machine sees the same files.

Two hashes per run: ``files`` (path → bytes, base64, since the client decodes replies as
text) and ``files:meta`` (path → ``FileInfo`` JSON). A write checks the caps against the
run's current files and writes both hashes in one transaction, ``WATCH``ing the
metadata so two agents writing at once cannot together break a cap.
"""

from __future__ import annotations

import base64
import time

from redis.asyncio import Redis
from redis.exceptions import WatchError

from core.errors import WorkspaceError
from core.state.keys import Keys
from core.workspace.base import (
    FileInfo,
    WorkspaceCaps,
    clean_path,
    guess_mime,
    missing_message,
)

_CAS_ATTEMPTS = 20


class RedisWorkspace:
    def __init__(self, redis: Redis, keys: Keys, caps: WorkspaceCaps, ttl_s: float) -> None:
        self._redis = redis
        self._keys = keys
        self.caps = caps
        self._ttl = max(1, int(ttl_s))

    async def files(self, run_id: str) -> list[FileInfo]:
        raw = await self._redis.hvals(self._keys.files_meta(run_id))
        return sorted((FileInfo.model_validate_json(v) for v in raw), key=lambda f: f.path)

    async def info(self, run_id: str, path: str) -> FileInfo | None:
        raw = await self._redis.hget(self._keys.files_meta(run_id), clean_path(path))
        return None if raw is None else FileInfo.model_validate_json(raw)

    async def read(self, run_id: str, path: str) -> bytes:
        name = clean_path(path)
        raw = await self._redis.hget(self._keys.files(run_id), name)
        if raw is None:
            raise WorkspaceError(missing_message(name, await self.files(run_id)))
        return base64.b64decode(raw)

    async def write(self, run_id: str, path: str, data: bytes) -> FileInfo:
        name = clean_path(path)
        info = FileInfo(path=name, size=len(data), mime=guess_mime(name), updated_at=time.time())
        meta, files = self._keys.files_meta(run_id), self._keys.files(run_id)
        encoded = base64.b64encode(data).decode("ascii")
        for _ in range(_CAS_ATTEMPTS):
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(meta)
                    current = [FileInfo.model_validate_json(v) for v in await pipe.hvals(meta)]
                    self.caps.check(name, len(data), current)
                    pipe.multi()
                    pipe.hset(files, name, encoded)
                    pipe.hset(meta, name, info.model_dump_json())
                    pipe.expire(files, self._ttl)
                    pipe.expire(meta, self._ttl)
                    await pipe.execute()
                    return info
                except WatchError:
                    continue
        raise WorkspaceError(f"{name} could not be written: the workspace kept changing; retry")

    async def delete(self, run_id: str, path: str) -> bool:
        name = clean_path(path)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self._keys.files(run_id), name)
            pipe.hdel(self._keys.files_meta(run_id), name)
            removed, _ = await pipe.execute()
        return bool(removed)

    async def clear(self, run_id: str) -> None:
        await self._redis.delete(self._keys.files(run_id), self._keys.files_meta(run_id))
