"""A run paused at its budget, in Discord: the pause with "Extend by $2.00" and "Stop
here" (persistent buttons: ``caramba:extend:<limit>:<run id>``, ``caramba:stop:<run
id>``, registered with the bot's other components), and the clicks →
``core.runs.budget.extend_run`` / ``stop_run`` by the person who clicked. Only the
people who may decide about the run (``core.runs.approval.may_decide``, with Discord's
approvers by id or role) can; others get a refusal only they see. Once decided, the
pause is edited to say who did what, without its buttons."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, cast

import discord

from bots.chat.intentions import Paused
from bots.chat.pause import (
    STOP_LABEL,
    added,
    extend_label,
    extended_text,
    pause_text,
    stopped_text,
)
from bots.chat.ports import Rendered
from bots.discord.approvals import is_approver, mark, named
from bots.discord.claims import Claimed
from bots.discord.context import DiscordContext
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from bots.discord.views import RUN
from core.runs.approval import may_decide
from core.runs.budget import extend_run, stop_run

log = logging.getLogger(__name__)
LIMIT = r"(?P<what>tokens|cost|wall_clock)"


def paused_message(p: Paused) -> Rendered:
    """The pause: its words, and the transport adds Extend / Stop (``buttons`` pause)."""
    payload = {"buttons": "pause", "run": p.run_id, "what": p.what, "extend": extend_label(p)}
    return Rendered(truncate(escape(pause_text(p)), MESSAGE_LIMIT), payload)


class ExtendButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:extend:{LIMIT}:{RUN}$",
):
    def __init__(self, run_id: str, what: str, label: str = "Extend") -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=label[:80],
            style=discord.ButtonStyle.success,
            custom_id=f"caramba:extend:{what}:{run_id}",
        )
        super().__init__(button)
        self.run_id, self.what = run_id, what

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ExtendButton:
        return cls(match["run"], match["what"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await _budget(interaction).decide(interaction, self.run_id, extend=self.what)


class StopButton(
    Claimed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=rf"^caramba:stop:{RUN}$"
):
    def __init__(self, run_id: str) -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=STOP_LABEL, style=discord.ButtonStyle.danger, custom_id=f"caramba:stop:{run_id}"
        )
        super().__init__(button)
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> StopButton:
        return cls(match["run"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await _budget(interaction).decide(interaction, self.run_id, extend=None)


BUDGET_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (ExtendButton, StopButton)


def pause_view(payload: dict[str, Any]) -> discord.ui.View:
    """Extend / Stop under a pause (the renderer's payload)."""
    run_id = str(payload.get("run", ""))
    view = discord.ui.View(timeout=None)
    what = str(payload.get("what", "cost"))
    view.add_item(ExtendButton(run_id, what, str(payload.get("extend", "Extend"))))
    view.add_item(StopButton(run_id))
    return view


def _budget(interaction: discord.Interaction) -> BudgetDecisions:
    """The budget handlers of the bot that received ``interaction``."""
    return cast(BudgetDecisions, getattr(interaction.client, "budget"))  # noqa: B009


class BudgetDecisions:
    """Extend / Stop clicks."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        await interaction.followup.send(
            truncate(text, MESSAGE_LIMIT), ephemeral=True, allowed_mentions=NO_PINGS
        )

    async def decide(
        self, interaction: discord.Interaction, run_id: str, *, extend: str | None
    ) -> None:
        """Extend (``extend``: the limit reached) or stop (None) the paused run, if the
        clicker may; the pause then says who did it. Else a refusal only they see."""
        await interaction.response.defer()
        try:
            await self._decide(interaction, run_id, extend)
        except Exception as exc:
            log.exception("handling a click on the budget of %s failed", run_id)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    async def _decide(
        self, interaction: discord.Interaction, run_id: str, extend: str | None
    ) -> None:
        svc, user = self.ctx.svc, str(interaction.user.id)
        approver = is_approver(svc.settings.discord, interaction.user)
        run = await svc.store.get_run(run_id)
        refusal = may_decide(svc.settings, run, user, mark, approver=approver)
        if refusal is not None:
            await self._tell(interaction, await named(self.ctx.links, refusal))
            return
        if extend is not None:
            step = await extend_run(svc, run_id, user)
        else:
            step = await stop_run(svc, run_id, user)
        if not step.ok:
            verb = "extended" if extend is not None else "stopped"
            await self._tell(interaction, escape(f"Not {verb}: {step.reason}."))
            return
        who = f"**{escape(interaction.user.display_name)}**"
        if extend is not None:
            outcome = extended_text(who, escape(added(extend, svc.settings.humans)))
        else:
            outcome = stopped_text(who)
        said = interaction.message.content if interaction.message else ""
        await interaction.edit_original_response(
            content=truncate(f"{said}\n{outcome}", MESSAGE_LIMIT),
            view=None,
            allowed_mentions=NO_PINGS,
        )
