"""A reply with files to a running run, from a form: "Reply with files" under the run's
status message (a persistent button, ``caramba:files:<run id>``) opens a modal with the
words and a ``FileUpload`` (discord.py 2.7, ``Label``-wrapped); its submission goes the way
a reply in the thread goes — the files into the run's workspace under ``inputs/`` (the
same caps and refusals as attachments, ``bots.discord.attachments``), then
``core.runs.people.reply`` — and the person who sent it is told, privately, what came of it."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, cast

import discord

from bots.discord.attachments import Attachments, refusal_text
from bots.discord.claims import Claimed
from bots.discord.context import DiscordContext
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from bots.discord.views import RUN
from core.runs import people
from core.runs.outcomes import NotDelivered
from core.types.people import Person

log = logging.getLogger(__name__)
LABEL = "Reply with files"
NOT_RUNNING = "This run is not running any more: files go to a run while it runs."


class ReplyButton(
    Claimed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=rf"^caramba:files:{RUN}$"
):
    def __init__(self, run_id: str) -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=LABEL, style=discord.ButtonStyle.secondary, custom_id=f"caramba:files:{run_id}"
        )
        super().__init__(button)
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ReplyButton:
        return cls(match["run"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await _replies(interaction).open(interaction, self.run_id)


REPLY_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (ReplyButton,)


class ReplyModal(discord.ui.Modal):
    """The words and the files of a reply to ``run_id`` (``max_files`` at most)."""

    def __init__(self, run_id: str, max_files: int) -> None:
        super().__init__(title=LABEL, custom_id=f"caramba:reply:{run_id}", timeout=900)
        self.run_id = run_id
        self.text: discord.ui.TextInput[ReplyModal] = discord.ui.TextInput(
            label="Your message",
            custom_id="text",
            style=discord.TextStyle.paragraph,
            required=False,
            max_length=4000,
        )
        self.files: discord.ui.FileUpload[ReplyModal] = discord.ui.FileUpload(
            custom_id="files", required=True, min_values=1, max_values=max(1, min(max_files, 10))
        )
        self.add_item(self.text)
        about = "The agents find them in the run's files, under inputs/"
        self.add_item(discord.ui.Label(text="Files", component=self.files, description=about))

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await _replies(interaction).submitted(interaction, self)


def _replies(interaction: discord.Interaction) -> Replies:
    return cast(Replies, getattr(interaction.client, "replies"))  # noqa: B009


class Replies:
    """The button's and the modal's handler (the bot's ``replies``)."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx
        self.attachments = Attachments(ctx.svc)

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        text = truncate(text, MESSAGE_LIMIT)
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)

    async def open(self, interaction: discord.Interaction, run_id: str) -> None:
        if not await people.takes_files(self.ctx.svc, run_id):
            await self._tell(interaction, NOT_RUNNING)
            return
        limit = self.ctx.svc.settings.discord.attachment_max_files
        await interaction.response.send_modal(ReplyModal(run_id, limit))

    async def submitted(self, interaction: discord.Interaction, modal: ReplyModal) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            await self._reply(interaction, modal)
        except Exception as exc:
            log.exception("handling a reply with files to %s failed", modal.run_id)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    async def _reply(self, interaction: discord.Interaction, modal: ReplyModal) -> None:
        svc, run_id = self.ctx.svc, modal.run_id
        if not await people.takes_files(svc, run_id):
            await self._tell(interaction, NOT_RUNNING)
            return
        fetched = await self.attachments.fetch(run_id, modal.files.values)
        said = [refusal_text(fetched.refused, started=True)] if fetched.refused else []
        text = people.with_attached(svc, (modal.text.value or "").strip(), fetched.kept)
        if text:
            user = interaction.user
            await self.ctx.links.remember_name(user.id, user.display_name)
            author = Person(str(user.id), user.display_name)
            outcome = await people.reply(svc, run_id, text, author)
            names = ", ".join(escape(f.path) for f in fetched.kept) or "no files"
            if isinstance(outcome, NotDelivered):
                said.append(escape(outcome.hint))
            else:
                said.append(f"✅ Sent to the agents ({names}).")
        await self._tell(interaction, "\n".join(said))
