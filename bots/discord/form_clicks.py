"""The clicks on a form an MCP server asks for, in Discord (``bots.discord.forms`` draws
it): Fill in opens the modal at once (after the people room said the clicker may), Done /
Confirm and Decline answer it, the modal's submission accepts it. The bot keeps one
:class:`FormClicks` as ``forms`` (the buttons and the modal find it there)."""

from __future__ import annotations

import contextlib
import logging
from typing import Literal

import discord

from bots.chat.ports import Place, Rendered
from bots.discord.approvals import WHO, named, person
from bots.discord.context import DiscordContext
from bots.discord.forms import MAX_INPUTS, FormModal
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from core.runs import people
from core.runs.outcomes import Done, FormInvalid, Refused

log = logging.getLogger(__name__)


class FormClicks:
    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        """A message only the clicker sees (``text`` already escaped)."""
        text = truncate(text, MESSAGE_LIMIT)
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)

    async def clicked(
        self, interaction: discord.Interaction, act: str, run_id: str, form_id: str
    ) -> None:
        try:
            if act == "fill":
                await self._fill(interaction, run_id, form_id)
            else:
                await interaction.response.defer()
                action: Literal["accept", "decline"] = "accept" if act == "accept" else "decline"
                clicker = person(self.ctx.svc.settings.discord, interaction.user)
                outcome = await people.answer_form(
                    self.ctx.svc, run_id, form_id, clicker, action, who=WHO
                )
                await self._outcome(interaction, run_id, outcome)
        except Exception as exc:
            log.exception("handling a click on the form %s of %s failed", form_id, run_id)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    async def _fill(self, interaction: discord.Interaction, run_id: str, form_id: str) -> None:
        clicker = person(self.ctx.svc.settings.discord, interaction.user)
        opened = await people.open_form(self.ctx.svc, run_id, form_id, clicker, who=WHO)
        if isinstance(opened, Refused):
            await self._tell(interaction, await named(self.ctx.links, opened.reason))
            return
        if len(opened.fields) > MAX_INPUTS:
            many = f"This form has {len(opened.fields)} fields; a Discord form holds {MAX_INPUTS}."
            await self._tell(
                interaction, escape(f"{many} Answer it in the web chat or decline it.")
            )
            return
        modal = FormModal(run_id, form_id, opened.server, opened.fields)
        await interaction.response.send_modal(modal)

    async def submitted(self, interaction: discord.Interaction, modal: FormModal) -> None:
        try:
            await interaction.response.defer()
            clicker = person(self.ctx.svc.settings.discord, interaction.user)
            outcome = await people.answer_form(
                self.ctx.svc, modal.run_id, modal.form_id, clicker, "accept", modal.typed(), who=WHO
            )
            await self._outcome(interaction, modal.run_id, outcome)
        except Exception as exc:
            log.exception("handling the form %s of %s failed", modal.form_id, modal.run_id)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    async def _outcome(
        self, interaction: discord.Interaction, run_id: str, outcome: Done | FormInvalid | Refused
    ) -> None:
        if isinstance(outcome, Refused):
            await self._tell(interaction, await named(self.ctx.links, outcome.reason))
            return
        if isinstance(outcome, FormInvalid):
            lines = "\n".join(f"• {escape(line)}" for line in outcome.lines)
            await self._tell(interaction, f"Not sent:\n{lines}\nPress Fill in to try again.")
            return
        clicker = person(self.ctx.svc.settings.discord, interaction.user)
        line = outcome.said.render(escape, f"**{escape(clicker.name)}**")
        message = interaction.message
        if message is None or interaction.channel_id is None:
            return
        content = truncate(f"{message.content}\n{line}", MESSAGE_LIMIT)
        place = Place(str(interaction.channel_id), str(interaction.channel_id))
        done = Rendered(content, {"buttons": "none"})
        redraw = self.ctx.redraws.redraw(run_id, place, str(message.id), done, "answered form")
        self.ctx.spawn(redraw)
