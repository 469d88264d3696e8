"""The workspace in Redis: every worker machine sees the same files.

Two hashes per run (``core.state.files``: the state room speaks the Redis commands): the
files' bytes and their ``FileInfo``. A write checks the caps against the run's current
files and writes both in one transaction, so two agents writing at once cannot together
break a cap.
"""

from __future__ import annotations

import base64
import time

from core.errors import WorkspaceError
from core.state.client import Client
from core.state.files import FileHashes
from core.state.keys import Keys
from core.workspace.base import (
    FileInfo,
    WorkspaceCaps,
    clean_path,
    guess_mime,
    missing_message,
)


class RedisWorkspace:
    def __init__(self, redis: Client, keys: Keys, caps: WorkspaceCaps, ttl_s: float) -> None:
        self._files = FileHashes(redis, keys)
        self.caps = caps
        self._ttl = max(1, int(ttl_s))

    async def files(self, run_id: str) -> list[FileInfo]:
        raw = await self._files.infos(run_id)
        return sorted((FileInfo.model_validate_json(v) for v in raw), key=lambda f: f.path)

    async def info(self, run_id: str, path: str) -> FileInfo | None:
        raw = await self._files.info(run_id, clean_path(path))
        return None if raw is None else FileInfo.model_validate_json(raw)

    async def read(self, run_id: str, path: str) -> bytes:
        name = clean_path(path)
        raw = await self._files.content(run_id, name)
        if raw is None:
            raise WorkspaceError(missing_message(name, await self.files(run_id)))
        return base64.b64decode(raw)

    async def write(self, run_id: str, path: str, data: bytes) -> FileInfo:
        name = clean_path(path)
        info = FileInfo(path=name, size=len(data), mime=guess_mime(name), updated_at=time.time())
        encoded = base64.b64encode(data).decode("ascii")

        def check(current: list[str]) -> None:
            self.caps.check(name, len(data), [FileInfo.model_validate_json(v) for v in current])

        written = await self._files.write(
            run_id, name, encoded, info.model_dump_json(), check=check, ttl_s=self._ttl
        )
        if not written:
            raise WorkspaceError(f"{name} could not be written: the workspace kept changing; retry")
        return info

    async def delete(self, run_id: str, path: str) -> bool:
        return await self._files.delete(run_id, clean_path(path))

    async def clear(self, run_id: str) -> None:
        await self._files.clear(run_id)
