"""Files people attach in Slack, fetched into a run's workspace under ``inputs/``.

A mention's or a reply's ``files`` (Slack file objects: ``name``, ``mimetype``, ``size``,
``url_private_download`` / ``url_private``) are fetched with the bot token (scope
``files:read``), sent only to Slack's file hosts (``slack.file_hosts``) or the Web API's
own host (a proxy or a local fake). Caps: ``slack.attachment_max_files`` per message,
``slack.attachment_max_bytes`` per file, and the workspace's own; programs are refused by
extension (``slack.attachment_blocked``) and by content (Windows and Linux executables).
Each refused file comes back with the reason in plain words, for a reply in the thread.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.text import escape
from core.errors import WorkspaceError
from core.services import Services
from core.types.files import INPUTS, AttachedFile, human_size

log = logging.getLogger(__name__)
# Executables by their first bytes: Windows (PE, "MZ") and Linux (ELF).
_PROGRAM_MAGIC = (b"MZ", b"\x7fELF")
_UNSAFE = re.compile(r"[^\w.\- ()+,@=]+")
_FETCH_TIMEOUT_S = 120
_CHUNK = 64 * 1024


@dataclass
class Fetched:
    """What came of a message's files: those kept in the workspace, and why the others
    were refused (one line each, naming the file)."""

    kept: list[AttachedFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class Refused(Exception):
    """A file not taken, with the reason in plain words."""


def safe_name(name: str, fallback: str) -> str:
    """A file name that stays one name in the workspace (no folders, no odd characters)."""
    base = posixpath.basename(name.replace("\\", "/")).strip()
    base = _UNSAFE.sub("_", base).strip(". ") or fallback
    return base[:120]


def _name(file: dict[str, Any], i: int) -> str:
    return safe_name(str(file.get("name") or file.get("title") or ""), f"file-{i + 1}")


def _unique(name: str, taken: set[str]) -> str:
    """``inputs/<name>``, or ``inputs/<stem>-2<ext>`` (…) if that path is taken."""
    stem, ext = posixpath.splitext(name)
    path, n = f"{INPUTS}{name}", 1
    while path in taken:
        n += 1
        path = f"{INPUTS}{stem}-{n}{ext}"
    return path


class Attachments:
    """Fetches a message's files into a run's workspace with ``client``'s token."""

    def __init__(self, svc: Services, client: AsyncWebClient) -> None:
        self.svc, self.client = svc, client
        slack = svc.settings.slack
        self.settings = slack
        self.max_bytes = min(slack.attachment_max_bytes, svc.settings.workspace.max_file_bytes)
        self.blocked = {e.lower().lstrip(".") for e in slack.attachment_blocked}
        api = urlsplit(slack.api_url)
        self.hosts = {h.lower() for h in slack.file_hosts} | {api.netloc.lower()}

    async def fetch(self, run_id: str, files: Sequence[dict[str, Any]]) -> Fetched:
        """Fetch ``files`` (from a Slack event) into ``run_id``'s workspace."""
        out = Fetched()
        cap = self.settings.attachment_max_files
        taken = {f.path for f in await self.svc.workspace.files(run_id)}
        for i, file in enumerate(files):
            name = _name(file, i)
            if i >= cap:
                out.refused.append(f"{name}: at most {cap} files are taken from one message")
                continue
            try:
                if not (file.get("url_private_download") or file.get("url_private")):
                    file = await self._info(file)
                    name = _name(file, i)
                data, mime = await self._fetch_one(file, name)
                path = _unique(name, taken)
                info = await self.svc.workspace.write(run_id, path, data)
            except Refused as exc:
                out.refused.append(f"{name}: {exc}")
                continue
            except WorkspaceError as exc:
                out.refused.append(f"{name}: {exc}")
                continue
            taken.add(info.path)
            out.kept.append(AttachedFile(path=info.path, size=info.size, mime=mime or info.mime))
        return out

    async def _fetch_one(self, file: dict[str, Any], name: str) -> tuple[bytes, str]:
        ext = posixpath.splitext(name)[1].lower().lstrip(".")
        if ext in self.blocked:
            raise Refused(f"programs (.{ext}) are not taken; attach data or documents")
        if file.get("mode") in ("tombstone", "hidden_by_limit") or file.get("is_external"):
            raise Refused("Slack does not let the bot read this file")
        size = int(file.get("size") or 0)
        if size > self.max_bytes:
            raise Refused(self._too_big(size))
        url = str(file.get("url_private_download") or file.get("url_private") or "")
        host = urlsplit(url).netloc.lower()
        if not url or host not in self.hosts:
            # The bot token goes to Slack's file hosts only.
            raise Refused(f"it is not on Slack's file servers ({host or 'no address'})")
        data = await self._download(url, file)
        if data.startswith(_PROGRAM_MAGIC):
            raise Refused("it is a program; attach data or documents")
        return data, str(file.get("mimetype") or "")

    async def _info(self, file: dict[str, Any]) -> dict[str, Any]:
        """The whole file object, for an event that carried only the file's id."""
        try:
            answer = await self.client.files_info(file=str(file.get("id", "")))
        except Exception as exc:
            log.warning("files.info for %s failed: %s", file.get("id"), exc)
            raise Refused("Slack would not say where the file is (files.info failed)") from exc
        found = answer.get("file")
        return dict(found) if isinstance(found, dict) else file

    def _too_big(self, size: int) -> str:
        return f"it is {human_size(size)}; a file may be at most {human_size(self.max_bytes)}"

    async def _download(self, url: str, file: dict[str, Any]) -> bytes:
        headers = {"Authorization": f"Bearer {self.client.token}"}
        try:
            async with (
                self._session() as session,
                session.get(url, headers=headers, timeout=_timeout()) as resp,
            ):
                if resp.status != 200:
                    raise Refused(f"Slack answered HTTP {resp.status} when asked for it")
                if resp.content_type == "text/html" and "html" not in str(
                    file.get("mimetype") or ""
                ):
                    # Slack's sign-in page: the token lacks files:read, or is not a bot's.
                    raise Refused(
                        "Slack sent a sign-in page instead of the file: the app needs the "
                        "files:read scope (see manifest.yml)"
                    )
                data = bytearray()
                async for chunk in resp.content.iter_chunked(_CHUNK):
                    data += chunk
                    if len(data) > self.max_bytes:
                        raise Refused(self._too_big(int(file.get("size") or len(data))))
                return bytes(data)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("fetching %s failed: %s", url, exc)
            raise Refused(f"it could not be fetched from Slack ({type(exc).__name__})") from exc

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[aiohttp.ClientSession]:
        """The client's HTTP session (one for the bot), or a session of its own."""
        if self.client.session is not None and not self.client.session.closed:
            yield self.client.session
            return
        async with aiohttp.ClientSession(trust_env=True) as session:
            yield session


def _timeout() -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=_FETCH_TIMEOUT_S)


def refusal_text(refused: Sequence[str], *, started: bool) -> str:
    """The reply in the thread for files not taken (mrkdwn)."""
    lines = "\n".join(f"• {escape(r)}" for r in refused)
    one = len(refused) == 1
    which, it, smaller = (
        ("this file", "it", "a smaller one") if one else ("these files", "them", "smaller ones")
    )
    after = (
        f"The agents go on without {it}."
        if started
        else f"I have not started on this request: mention me again without {it}, or with "
        f"{smaller}."
    )
    return f":warning: I could not take {which}:\n{lines}\n{after}"
