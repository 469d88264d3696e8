"""What a click on a run's waiting message does around core's call, the same for every
such message (a budget pause, a tool call's request, an over-budget ask): the
interaction deferred at once, a failure logged and told to the clicker only (never
Discord's "This interaction failed"), a refusal told to the clicker only, and once
decided the message redrawn through the run's outbox (``bots.chat.redraw``) — what it
showed plus who decided, without its buttons."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

import discord

from bots.chat.ports import Place, Rendered
from bots.discord.context import DiscordContext
from bots.discord.layout import DONE, shown_text, text_layout
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, truncate

log = logging.getLogger(__name__)


class RunClicks:
    """A base for the handlers of clicks on a run's message."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        """``text`` to the clicker only, pinging nobody."""
        await interaction.followup.send(
            truncate(text, MESSAGE_LIMIT), ephemeral=True, allowed_mentions=NO_PINGS
        )

    async def _answered(
        self,
        interaction: discord.Interaction,
        what: str,
        act: Callable[[], Awaitable[None]],
    ) -> None:
        """Defer ``interaction``, then ``act``; a failure is logged (``what``: the click, in
        words) and told to the clicker."""
        await interaction.response.defer()
        try:
            await act()
        except Exception as exc:
            log.exception("handling a click on %s failed", what)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    def _redraw_decided(
        self, interaction: discord.Interaction, run_id: str, line: str, what: str
    ) -> None:
        """The clicked message redrawn with ``line`` under what it showed, no buttons;
        delivered (and retried) after the click is answered."""
        message = interaction.message
        if message is None or interaction.channel_id is None:
            return
        content = truncate(f"{shown_text(message)}\n{line}", MESSAGE_LIMIT)
        place = Place(str(interaction.channel_id), str(interaction.channel_id))
        done = Rendered(content, {"buttons": "none", "layout": text_layout(content, DONE)})
        self.ctx.spawn(self.ctx.redraws.redraw(run_id, place, str(message.id), done, what))


__all__ = ["RunClicks"]
