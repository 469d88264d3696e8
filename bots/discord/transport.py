"""The chat layer's calls into a Discord thread (``bots.chat.ports.Transport``), through
discord.py: posts and edits with the renderer's layouts (Components V2: the proposal
card, ``bots.discord.layout``) or embeds and the bot's persistent buttons,
text files, and the run's workspace files as attachments. Everything is sent with
``AllowedMentions.none()``; a 429 is waited out by discord.py's rate limiter (which also
keeps to the per-channel buckets Discord announces), so no post is lost to it."""

from __future__ import annotations

import io
import logging
from typing import Any

import aiohttp
import discord

from bots.chat.ports import Failure, Files, Payload, Place, TextFile
from bots.discord.budget import pause_items
from bots.discord.forms import form_view
from bots.discord.inspector import with_link
from bots.discord.layout import layout_view
from bots.discord.links import Links
from bots.discord.replies import ReplyButton
from bots.discord.schedule_items import every_view
from bots.discord.spend import spend_items
from bots.discord.text import NO_PINGS
from bots.discord.tool_approvals import approval_items
from bots.discord.views import ApproveButton, EditButton, RejectButton, cancel_view
from core.workspace.base import Workspace

log = logging.getLogger(__name__)
RATINGS = ("👍", "👎")
# Progress of an upload of a run's files, kept for a day.
_FILES_TTL_S = 24 * 3600


def _items(payload: dict[str, Any]) -> list[discord.ui.Item[Any]]:
    """The buttons of a layout (its ``buttons``)."""
    run_id = str(payload.get("run", ""))
    match payload.get("buttons"):
        case "card":
            return [ApproveButton(run_id), EditButton(run_id), RejectButton(run_id)]
        case "pause":
            return pause_items(payload)
        case "tool_approval":
            return approval_items(payload)
        case "spend_ask":
            return spend_items(payload)
        case _:
            return []


def _view(payload: dict[str, Any]) -> discord.ui.View | None:
    match payload.get("buttons"), payload.get("run", ""):
        case "cancel", run_id:
            view = cancel_view(run_id)  # and a reply with files, while it runs
            view.add_item(ReplyButton(run_id))
            return view
        case "form", _:
            return form_view(payload)
        case _:
            return None


def _parts(text: str, payload: Payload) -> dict[str, Any]:
    """discord.py's keyword arguments for ``text`` and ``payload``."""
    data = payload if isinstance(payload, dict) else {}
    if "layout" in data:
        # Components V2: the layout is the whole message (no content, no embeds; an
        # edit clears those of a card sent before as an embed).
        return {
            "content": None,
            "embeds": [],
            "view": layout_view(data, _items(data)),
            "allowed_mentions": NO_PINGS,
        }
    kwargs: dict[str, Any] = {"content": text or None, "allowed_mentions": NO_PINGS}
    if "embeds" in data:
        kwargs["embeds"] = [discord.Embed.from_dict(e) for e in data["embeds"]]
    if "buttons" in data:
        view = _view(data)
        kwargs["view"] = view
    if data.get("link"):
        kwargs["view"] = with_link(kwargs.get("view"), str(data["link"]))
    if data.get("every") and kwargs.get("view") is None:
        kwargs["view"] = every_view(str(data["every"]))
    return kwargs


class DiscordTransport:
    def __init__(self, client: discord.Client, workspace: Workspace, links: Links) -> None:
        self.client, self.workspace, self.links = client, workspace, links

    def _channel(self, place: Place) -> discord.PartialMessageable:
        """The thread (or channel) of ``place``, without needing it in the cache."""
        return self.client.get_partial_messageable(int(place.thread or place.channel))

    async def post(self, place: Place, text: str, payload: Payload) -> str:
        kwargs = _parts(text, payload)
        if kwargs.get("view") is None:
            kwargs.pop("view", None)
        message = await self._channel(place).send(**kwargs)
        run_id = payload.get("rate") if isinstance(payload, dict) else None
        if run_id:
            await self.links.mark_result(message.id, str(run_id))
            for emoji in RATINGS:
                try:
                    await message.add_reaction(emoji)
                except discord.HTTPException:
                    log.warning("could not add %s under the result of %s", emoji, run_id)
        return str(message.id)

    async def update(self, place: Place, message_id: str, text: str, payload: Payload) -> None:
        message = self._channel(place).get_partial_message(int(message_id))
        await message.edit(**_parts(text, payload))

    async def upload(self, place: Place, file: TextFile) -> None:
        data = discord.File(io.BytesIO(file.content.encode()), filename=file.filename)
        await self._channel(place).send(
            content=file.comment or None, file=data, allowed_mentions=NO_PINGS
        )

    def _files_key(self, files: Files) -> str:
        return self.links.keys.files(files.key)

    async def send_files(self, place: Place, files: Files) -> None:
        """All of ``files`` in one message: sent whole or not at all, so a try after a
        crash sends it again only if the first never reached Discord."""
        key = self._files_key(files)
        if await self.links.store.get(key):
            return
        attached = [
            discord.File(
                io.BytesIO(await self.workspace.read(files.run, f.path)), filename=f.filename
            )
            for f in files.files
        ]
        message = await self._channel(place).send(
            content=files.comment or None, files=attached, allowed_mentions=NO_PINGS
        )
        await self.links.store.put(key, str(message.id), _FILES_TTL_S)

    async def forget_files(self, files: Files) -> None:
        await self.links.store.forget(self._files_key(files))

    def classify(self, exc: BaseException) -> Failure:
        """Discord's 5xx and 429s (beyond what discord.py waited out) and lost connections
        are worth another try; any other refusal (4xx) is for good."""
        if isinstance(exc, discord.RateLimited):
            return Failure(retry=True, wait_s=exc.retry_after, why="rate limited")
        if isinstance(exc, discord.HTTPException):
            retry = exc.status == 429 or exc.status >= 500
            return Failure(retry=retry, why=f"HTTP {exc.status}: {exc.text[:200]}")
        if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
            return Failure(retry=True, answered=False, why=type(exc).__name__)
        return Failure(retry=False, why=f"{type(exc).__name__}: {exc}")
