"""Files people attach to a request or to a reply in a run's thread, taken into the run's
workspace under ``inputs/`` — the same rules on every platform: at most so many files a
message, each at most so big (and within the workspace's own caps), no programs (by
extension, and by content: Windows and Linux executables), names that stay one file in
the workspace, never one file over another. Each adapter reads the bytes its own way;
each refused file comes back with the reason in plain words, for a reply in the thread."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from core.errors import WorkspaceError
from core.services import Services
from core.types.files import INPUTS, AttachedFile, human_size

# Executables by their first bytes: Windows (PE, "MZ") and Linux (ELF).
_PROGRAM_MAGIC = (b"MZ", b"\x7fELF")
_UNSAFE = re.compile(r"[^\w.\- ()+,@=]+")
File = TypeVar("File")


@dataclass
class Fetched:
    """What came of a message's files: those kept in the workspace, and why the others
    were refused (one line each, naming the file)."""

    kept: list[AttachedFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class Refused(Exception):
    """A file not taken, with the reason in plain words (``name``: the file's, when it
    became known only while reading it)."""

    def __init__(self, why: str, name: str = "") -> None:
        super().__init__(why)
        self.name = name


@dataclass(frozen=True)
class Read:
    """A file's bytes as the platform handed them over, under ``name`` (which may be
    better known once read), with the type the platform gave (or "")."""

    name: str
    data: bytes
    mime: str = ""


def safe_name(name: str, fallback: str) -> str:
    """A file name that stays one name in the workspace (no folders, no odd characters)."""
    base = posixpath.basename(name.replace("\\", "/")).strip()
    base = _UNSAFE.sub("_", base).strip(". ") or fallback
    return base[:120]


def unique_path(name: str, taken: set[str]) -> str:
    """``inputs/<name>``, or ``inputs/<stem>-2<ext>`` (…) if that path is taken."""
    stem, ext = posixpath.splitext(name)
    path, n = f"{INPUTS}{name}", 1
    while path in taken:
        n += 1
        path = f"{INPUTS}{stem}-{n}{ext}"
    return path


class InputRules:
    """One platform's caps (its ``attachment_*`` settings) within the workspace's."""

    def __init__(
        self, svc: Services, max_files: int, max_bytes: int, blocked: Iterable[str]
    ) -> None:
        self.svc = svc
        self.max_files = max_files
        self.max_bytes = min(max_bytes, svc.settings.workspace.max_file_bytes)
        self.blocked = {e.lower().lstrip(".") for e in blocked}

    def check_name(self, name: str) -> None:
        ext = posixpath.splitext(name)[1].lower().lstrip(".")
        if ext in self.blocked:
            raise Refused(f"programs (.{ext}) are not taken; attach data or documents")

    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise Refused(self.too_big(size))

    def too_big(self, size: int) -> str:
        return f"it is {human_size(size)}; a file may be at most {human_size(self.max_bytes)}"

    def check_data(self, data: bytes) -> None:
        if len(data) > self.max_bytes:
            raise Refused(f"it is larger than {human_size(self.max_bytes)}")
        if data.startswith(_PROGRAM_MAGIC):
            raise Refused("it is a program; attach data or documents")

    async def take(
        self,
        run_id: str,
        files: Sequence[File],
        name_of: Callable[[File, int], str],
        read: Callable[[File, str], Awaitable[Read]],
    ) -> Fetched:
        """Each of ``files`` (named by ``name_of``, read by ``read``, which applies the
        name and size checks before it fetches) into ``run_id``'s workspace."""
        out = Fetched()
        workspace = self.svc.workspace
        taken = {f.path for f in await workspace.files(run_id)} if files else set()
        for i, file in enumerate(files):
            name = name_of(file, i)
            try:
                if i >= self.max_files:
                    raise Refused(f"at most {self.max_files} files are taken from one message")
                got = await read(file, name)
                name = got.name
                self.check_data(got.data)
                info = await workspace.write(run_id, unique_path(name, taken), got.data)
            except (Refused, WorkspaceError) as exc:
                out.refused.append(f"{getattr(exc, 'name', '') or name}: {exc}")
                continue
            taken.add(info.path)
            out.kept.append(
                AttachedFile(path=info.path, size=info.size, mime=got.mime or info.mime)
            )
        return out
