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
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.inputs import Fetched, InputRules, Read, Refused, safe_name
from bots.slack.text import escape
from core.services import Services

log = logging.getLogger(__name__)
_FETCH_TIMEOUT_S = 120
_CHUNK = 64 * 1024


def _name(file: dict[str, Any], i: int) -> str:
    return safe_name(str(file.get("name") or file.get("title") or ""), f"file-{i + 1}")


class Attachments:
    """Fetches a message's files into a run's workspace with ``client``'s token."""

    def __init__(self, svc: Services, client: AsyncWebClient) -> None:
        self.svc, self.client = svc, client
        slack = svc.settings.slack
        self.rules = InputRules(
            svc, slack.attachment_max_files, slack.attachment_max_bytes, slack.attachment_blocked
        )
        api = urlsplit(slack.api_url)
        self.hosts = {h.lower() for h in slack.file_hosts} | {api.netloc.lower()}

    async def fetch(self, run_id: str, files: Sequence[dict[str, Any]]) -> Fetched:
        """Fetch ``files`` (from a Slack event) into ``run_id``'s workspace."""
        return await self.rules.take(run_id, files, _name, self._read)

    async def _read(self, file: dict[str, Any], name: str) -> Read:
        if not (file.get("url_private_download") or file.get("url_private")):
            file = await self._info(file)
            name = _name(file, 0) if file.get("name") or file.get("title") else name
            try:
                return await self._fetch_one(file, name)
            except Refused as exc:
                raise Refused(str(exc), name) from exc
        return await self._fetch_one(file, name)

    async def _fetch_one(self, file: dict[str, Any], name: str) -> Read:
        self.rules.check_name(name)
        if file.get("mode") in ("tombstone", "hidden_by_limit") or file.get("is_external"):
            raise Refused("Slack does not let the bot read this file")
        self.rules.check_size(int(file.get("size") or 0))
        url = str(file.get("url_private_download") or file.get("url_private") or "")
        host = urlsplit(url).netloc.lower()
        if not url or host not in self.hosts:
            # The bot token goes to Slack's file hosts only.
            raise Refused(f"it is not on Slack's file servers ({host or 'no address'})")
        data = await self._download(url, file)
        return Read(name, data, str(file.get("mimetype") or ""))

    async def _info(self, file: dict[str, Any]) -> dict[str, Any]:
        """The whole file object, for an event that carried only the file's id."""
        try:
            answer = await self.client.files_info(file=str(file.get("id", "")))
        except Exception as exc:
            log.warning("files.info for %s failed: %s", file.get("id"), exc)
            raise Refused("Slack would not say where the file is (files.info failed)") from exc
        found = answer.get("file")
        return dict(found) if isinstance(found, dict) else file

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
                    if len(data) > self.rules.max_bytes:
                        raise Refused(self.rules.too_big(int(file.get("size") or len(data))))
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
