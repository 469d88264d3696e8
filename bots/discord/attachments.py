"""Files attached to a request or a reply in a run's thread, read from Discord's CDN (the
attachment's signed URL, through discord.py) into the run's workspace under ``inputs/``.

Caps: ``discord.attachment_max_files`` per message, ``discord.attachment_max_bytes`` per
file, and the workspace's own; programs are refused by extension
(``discord.attachment_blocked``) and by content (Windows and Linux executables). Each
refused file comes back with the reason in plain words, for a reply in the thread."""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import discord

from bots.discord.text import escape
from core.errors import WorkspaceError
from core.services import Services
from core.types.files import INPUTS, AttachedFile, human_size

log = logging.getLogger(__name__)
# Executables by their first bytes: Windows (PE, "MZ") and Linux (ELF).
_PROGRAM_MAGIC = (b"MZ", b"\x7fELF")
_UNSAFE = re.compile(r"[^\w.\- ()+,@=]+")


@dataclass
class Fetched:
    """The files kept in the workspace, and why the others were refused (one line each)."""

    kept: list[AttachedFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _safe_name(name: str, i: int) -> str:
    base = posixpath.basename(name.replace("\\", "/")).strip()
    return (_UNSAFE.sub("_", base).strip(". ") or f"file-{i + 1}")[:120]


def _free_path(name: str, taken: set[str]) -> str:
    stem, ext = posixpath.splitext(name)
    path, n = f"{INPUTS}{name}", 1
    while path in taken:
        n += 1
        path = f"{INPUTS}{stem}-{n}{ext}"
    return path


class Attachments:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        settings = svc.settings.discord
        self.max_files = settings.attachment_max_files
        self.max_bytes = min(settings.attachment_max_bytes, svc.settings.workspace.max_file_bytes)
        self.blocked = {e.lower().lstrip(".") for e in settings.attachment_blocked}

    async def fetch(self, run_id: str, files: Sequence[discord.Attachment]) -> Fetched:
        """Read ``files`` into ``run_id``'s workspace."""
        out = Fetched()
        taken = {f.path for f in await self.svc.workspace.files(run_id)} if files else set()
        for i, file in enumerate(files):
            name = _safe_name(file.filename, i)
            try:
                if i >= self.max_files:
                    raise _Refused(f"at most {self.max_files} files are taken from one message")
                data = await self._read(file, name)
                info = await self.svc.workspace.write(run_id, _free_path(name, taken), data)
            except (_Refused, WorkspaceError) as exc:
                out.refused.append(f"{name}: {exc}")
                continue
            taken.add(info.path)
            out.kept.append(
                AttachedFile(path=info.path, size=info.size, mime=file.content_type or info.mime)
            )
        return out

    async def _read(self, file: discord.Attachment, name: str) -> bytes:
        ext = posixpath.splitext(name)[1].lower().lstrip(".")
        if ext in self.blocked:
            raise _Refused(f"programs (.{ext}) are not taken; attach data or documents")
        if file.size > self.max_bytes:
            raise _Refused(
                f"it is {human_size(file.size)}; a file may be at most {human_size(self.max_bytes)}"
            )
        try:
            data = await file.read()
        except discord.HTTPException as exc:
            log.warning("reading attachment %s failed: %s", file.id, exc)
            raise _Refused(f"Discord would not hand it over (HTTP {exc.status})") from exc
        if len(data) > self.max_bytes:
            raise _Refused(f"it is larger than {human_size(self.max_bytes)}")
        if data.startswith(_PROGRAM_MAGIC):
            raise _Refused("it is a program; attach data or documents")
        return data


class _Refused(Exception):
    """A file not taken, with the reason in plain words."""


def refusal_text(refused: Sequence[str], *, started: bool) -> str:
    """The reply in the thread for files not taken."""
    lines = "\n".join(f"• {escape(r)}" for r in refused)
    one = len(refused) == 1
    which, it = ("this file", "it") if one else ("these files", "them")
    after = (
        f"The agents go on without {it}."
        if started
        else f"I have not started on this request: ask again without {it}, or with smaller ones."
    )
    return f"⚠️ I could not take {which}:\n{lines}\n{after}"
