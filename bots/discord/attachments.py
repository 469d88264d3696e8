"""Files attached to a request or a reply in a run's thread, read from Discord's CDN (the
attachment's signed URL, through discord.py) into the run's workspace under ``inputs/``.

Caps: ``discord.attachment_max_files`` per message, ``discord.attachment_max_bytes`` per
file, and the workspace's own; programs are refused by extension
(``discord.attachment_blocked``) and by content (Windows and Linux executables). Each
refused file comes back with the reason in plain words, for a reply in the thread."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import discord

from bots.chat.inputs import Fetched, InputRules, Read, Refused, safe_name
from bots.discord.text import escape
from core.services import Services

log = logging.getLogger(__name__)


def _name(file: discord.Attachment, i: int) -> str:
    return safe_name(file.filename, f"file-{i + 1}")


class Attachments:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        settings = svc.settings.discord
        self.rules = InputRules(
            svc,
            settings.attachment_max_files,
            settings.attachment_max_bytes,
            settings.attachment_blocked,
        )

    async def fetch(self, run_id: str, files: Sequence[discord.Attachment]) -> Fetched:
        """Read ``files`` into ``run_id``'s workspace."""
        return await self.rules.take(run_id, files, _name, self._read)

    async def _read(self, file: discord.Attachment, name: str) -> Read:
        self.rules.check_name(name)
        self.rules.check_size(file.size)
        try:
            data = await file.read()
        except discord.HTTPException as exc:
            log.warning("reading attachment %s failed: %s", file.id, exc)
            raise Refused(f"Discord would not hand it over (HTTP {exc.status})") from exc
        return Read(name, data, file.content_type or "")


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
