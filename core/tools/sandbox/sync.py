"""The run's workspace as a folder for the sandbox, and what the code did to it, back.

Only regular files come back: a link the code made (to /etc/shadow, say) is never
followed by the host, and a pipe or device is never opened. A file the workspace refuses
(too big, too many) is reported, not fatal.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import WorkspaceError
from core.workspace.base import FileInfo, Workspace, human_size


@dataclass(frozen=True)
class Snapshot:
    """What was put in: path → digest of its bytes."""

    digests: dict[str, bytes]


@dataclass
class SyncReport:
    saved: list[FileInfo] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # path → why it was not kept
    refused: dict[str, str] = field(default_factory=dict)


async def materialise(ws: Workspace, run_id: str, root: Path, owner: int | None) -> Snapshot:
    """Write the run's files under ``root`` (owned by ``owner``, the sandbox's user, when
    it is not this process's)."""
    digests: dict[str, bytes] = {}
    for info in await ws.files(run_id):
        try:
            data = await ws.read(run_id, info.path)
        except WorkspaceError:
            continue  # deleted meanwhile by another agent
        await asyncio.to_thread(_put, root, info.path, data, owner)
        digests[info.path] = _digest(data)
    if owner is not None:
        os.chown(root, owner, owner)
    return Snapshot(digests)


async def sync_back(ws: Workspace, run_id: str, root: Path, before: Snapshot) -> SyncReport:
    """Save new and changed files into the workspace; delete those the code deleted."""
    report = SyncReport()
    caps = ws.caps
    files, others, cut = await asyncio.to_thread(_scan, root, 2 * caps.max_files + 50)
    report.refused.update(others)
    if cut:
        # Not every file was seen: deleting the unseen ones would be wrong.
        report.refused["(the rest)"] = (
            f"too many files (a workspace holds at most {caps.max_files}): not looked at"
        )
    gone = set() if cut else set(before.digests) - files - set(others)
    for path in sorted(gone):
        try:
            if await ws.delete(run_id, path):
                report.deleted.append(path)
        except WorkspaceError as exc:
            report.refused[path] = str(exc)
    limit = caps.max_file_bytes
    for path in sorted(files):
        try:
            data = await asyncio.to_thread(_read, root, path, limit)
        except OSError as exc:
            report.refused[path] = f"could not be read ({exc.strerror or exc})"
            continue
        if data is None:
            report.refused[path] = f"larger than a workspace file may be ({human_size(limit)})"
            continue
        if before.digests.get(path) == _digest(data):
            continue
        try:
            report.saved.append(await ws.write(run_id, path, data))
        except WorkspaceError as exc:
            report.refused[path] = str(exc)
        except (UnicodeError, ValueError):
            report.refused[path] = "not a usable file name"
    return report


def remove_tree(root: Path) -> None:
    """Delete ``root``, whatever modes the code left inside it."""

    def retry(func: object, path: str, _exc: object) -> None:
        folder = os.path.dirname(path)
        if stat.S_ISDIR(os.lstat(folder).st_mode):  # never through a link
            os.chmod(folder, 0o700)
        if callable(func):
            func(path)

    shutil.rmtree(root, onerror=retry)


def _put(root: Path, rel: str, data: bytes, owner: int | None) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    if owner is not None:
        for folder in reversed(target.relative_to(root).parents):
            os.chown(root / folder, owner, owner)
        os.chown(target, owner, owner)


def _scan(root: Path, max_entries: int) -> tuple[set[str], dict[str, str], bool]:
    """Regular files under ``root``, what else is there (path → why it is not kept), and
    whether the scan stopped at ``max_entries``. Links are not followed."""
    files: set[str] = set()
    others: dict[str, str] = {}
    stack = [root]
    seen = 0
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return files, others, True
            rel = Path(entry.path).relative_to(root).as_posix()
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                stack.append(Path(entry.path))
            elif stat.S_ISREG(mode):
                files.add(rel)
            elif stat.S_ISLNK(mode):
                others[rel] = "a link, not kept (write the file itself)"
            else:
                others[rel] = "not a regular file"
    return files, others, False


def _read(root: Path, rel: str, limit: int) -> bytes | None:
    """The file's bytes, or ``None`` past ``limit``. No part of the path is followed if
    it is a link (were a process of the code still alive, it could swap a folder for a
    link to a host folder between the scan and the read)."""
    *folders, name = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder in folders:
            inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            raise OSError(0, "not a regular file")
        data = f.read(limit + 1)
    return None if len(data) > limit else data


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()
