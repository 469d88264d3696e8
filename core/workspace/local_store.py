"""The workspace as a folder per run (embedded mode, one machine): ``<root>/<run>/<path>``."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from core.errors import WorkspaceError
from core.workspace.base import (
    FileInfo,
    WorkspaceCaps,
    clean_path,
    guess_mime,
    missing_message,
)


class LocalWorkspace:
    def __init__(self, root: Path, caps: WorkspaceCaps) -> None:
        self._root = root
        self.caps = caps
        # One lock per store: the cap check and the write happen together.
        self._lock = asyncio.Lock()

    def _run_dir(self, run_id: str) -> Path:
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise WorkspaceError(f"{run_id!r} is not a run id")
        return self._root / run_id

    async def files(self, run_id: str) -> list[FileInfo]:
        return await asyncio.to_thread(self._list, run_id)

    def _list(self, run_id: str) -> list[FileInfo]:
        base = self._run_dir(run_id)
        if not base.is_dir():
            return []
        out = []
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.is_symlink():
                rel = p.relative_to(base).as_posix()
                st = p.stat()
                out.append(
                    FileInfo(
                        path=rel, size=st.st_size, mime=guess_mime(rel), updated_at=st.st_mtime
                    )
                )
        return out

    async def info(self, run_id: str, path: str) -> FileInfo | None:
        name = clean_path(path)
        return next((f for f in await self.files(run_id) if f.path == name), None)

    async def read(self, run_id: str, path: str) -> bytes:
        name = clean_path(path)
        target = self._run_dir(run_id) / name
        if not target.is_file() or target.is_symlink():
            raise WorkspaceError(missing_message(name, await self.files(run_id)))
        return await asyncio.to_thread(target.read_bytes)

    async def write(self, run_id: str, path: str, data: bytes) -> FileInfo:
        name = clean_path(path)
        async with self._lock:
            self.caps.check(name, len(data), await self.files(run_id))
            target = self._run_dir(run_id) / name
            await asyncio.to_thread(_write, target, data)
        st = target.stat()
        return FileInfo(path=name, size=st.st_size, mime=guess_mime(name), updated_at=st.st_mtime)

    async def delete(self, run_id: str, path: str) -> bool:
        target = self._run_dir(run_id) / clean_path(path)
        if not target.is_file():
            return False
        target.unlink()
        return True

    async def clear(self, run_id: str) -> None:
        await asyncio.to_thread(shutil.rmtree, self._run_dir(run_id), True)


def _write(target: Path, data: bytes) -> None:
    if target.parent.exists() and not target.parent.is_dir():
        raise WorkspaceError(f"{target.parent.name} is a file, not a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
