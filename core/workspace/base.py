"""The workspace interface, its file record, its caps, and the rules for file paths."""

from __future__ import annotations

import mimetypes
import posixpath
from dataclasses import dataclass
from typing import Protocol

from core.config_tools import WorkspaceSettings
from core.errors import WorkspaceError
from core.types._base import Frozen

MAX_PATH_CHARS = 200


class FileInfo(Frozen):
    """One file of a run's workspace."""

    path: str
    size: int
    mime: str
    updated_at: float

    @property
    def is_text(self) -> bool:
        return is_text_mime(self.mime)

    def describe(self) -> str:
        """``report.md (2.1 KB, text/markdown)``: how agents and people see a file."""
        return f"{self.path} ({human_size(self.size)}, {self.mime})"


@dataclass(frozen=True)
class WorkspaceCaps:
    max_file_bytes: int
    max_run_bytes: int
    max_files: int

    @classmethod
    def from_settings(cls, ws: WorkspaceSettings) -> WorkspaceCaps:
        return cls(ws.max_file_bytes, ws.max_run_bytes, ws.max_files)

    def check(self, path: str, size: int, others: list[FileInfo]) -> None:
        """Raise ``WorkspaceError`` if writing ``size`` bytes at ``path`` breaks a cap;
        ``others`` are the run's files (the one at ``path`` counts as replaced)."""
        if size > self.max_file_bytes:
            raise WorkspaceError(
                f"{path} would be {human_size(size)}; one file may hold at most "
                f"{human_size(self.max_file_bytes)}. Write a smaller file (summarise, sample "
                "or split the data)."
            )
        rest = [f for f in others if f.path != path]
        if len(rest) + 1 > self.max_files:
            raise WorkspaceError(
                f"the run's workspace already holds {len(rest)} files (at most "
                f"{self.max_files}); delete or overwrite files instead of adding more."
            )
        total = sum(f.size for f in rest) + size
        if total > self.max_run_bytes:
            raise WorkspaceError(
                f"the run's workspace would hold {human_size(total)}; a run may keep at most "
                f"{human_size(self.max_run_bytes)}. Delete files you no longer need."
            )


class Workspace(Protocol):
    """A run's files, by relative path (``data/sales.csv``). Every method takes the run."""

    caps: WorkspaceCaps

    async def files(self, run_id: str) -> list[FileInfo]:
        """The run's files, sorted by path."""
        ...

    async def info(self, run_id: str, path: str) -> FileInfo | None: ...

    async def read(self, run_id: str, path: str) -> bytes:
        """The file's bytes; ``WorkspaceError`` if there is no such file."""
        ...

    async def write(self, run_id: str, path: str, data: bytes) -> FileInfo:
        """Create or replace a file; ``WorkspaceError`` past a cap or for a bad path."""
        ...

    async def delete(self, run_id: str, path: str) -> bool: ...

    async def clear(self, run_id: str) -> None:
        """Remove every file of the run."""
        ...


def clean_path(path: str) -> str:
    """A workspace path in normal form (``./a//b.txt`` → ``a/b.txt``), or
    ``WorkspaceError`` for one that leaves the workspace or is not a file name."""
    raw = path.strip().replace("\\", "/")
    if not raw:
        raise WorkspaceError("the file path is empty: give a relative path such as 'notes.md'")
    if raw.startswith("/") or raw.startswith("~"):
        raise WorkspaceError(
            f"{path!r} is absolute: workspace paths are relative, such as 'data/table.csv'"
        )
    norm = posixpath.normpath(raw)
    parts = norm.split("/")
    if norm in (".", "") or ".." in parts:
        raise WorkspaceError(f"{path!r} leaves the workspace: use a path inside it")
    if len(norm) > MAX_PATH_CHARS or any(ord(c) < 32 for c in norm):
        raise WorkspaceError(
            f"{path[:60]!r} is not a usable file name (at most {MAX_PATH_CHARS} printable "
            "characters)"
        )
    return norm


def missing_message(name: str, files: list[FileInfo]) -> str:
    """No file ``name``: say which files there are."""
    if not files:
        return f"there is no file {name!r}: the run's workspace is empty"
    listed = ", ".join(f.path for f in files[:20])
    more = f" and {len(files) - 20} more" if len(files) > 20 else ""
    return f"there is no file {name!r}; the workspace holds: {listed}{more}"


_TEXT_MIMES = ("application/json", "application/xml", "application/javascript", "image/svg+xml")


def guess_mime(path: str) -> str:
    mime, _ = mimetypes.guess_type(path)
    if mime:
        return mime
    ext = posixpath.splitext(path)[1].lower()
    text_exts = {".md", ".txt", ".csv", ".tsv", ".log", ".py", ".sh", ".toml", ".yaml", ".yml"}
    return "text/plain" if ext in text_exts or not ext else "application/octet-stream"


def is_text_mime(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_MIMES


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    return f"{size} B"
