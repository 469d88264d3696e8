"""A run paused at its budget, in Discord: the pause with "Extend by $2.00" and "Stop
here" (persistent buttons: ``caramba:extend:<limit>:<run id>``, ``caramba:stop:<run
id>``, registered with the bot's other components), and the clicks →
``core.runs.people.extend`` / ``stop`` by the person who clicked (the rule — who may
decide about the run, with Discord's approvers by id or role — is the people room's);
others get a refusal only they see. Once decided, the pause is redrawn through an
outbox (``bots.chat.redraw``) to say who did what, without its buttons."""

from __future__ import annotations

import logging
import re
from typing import Any, cast

import discord

from bots.chat.intentions import Paused
from bots.chat.pause import STOP_LABEL, extend_label, pause_text
from bots.chat.ports import Rendered
from bots.discord.approvals import WHO, named, person
from bots.discord.claims import Claimed
from bots.discord.layout import WAITING, text_layout
from bots.discord.run_clicks import RunClicks
from bots.discord.text import MESSAGE_LIMIT, escape, truncate
from bots.discord.views import RUN
from core.runs import people
from core.runs.outcomes import Refused

log = logging.getLogger(__name__)
LIMIT = r"(?P<what>tokens|cost|wall_clock)"


def paused_message(p: Paused) -> Rendered:
    """The pause as a Components V2 layout: its words, Extend / Stop under them (the
    transport adds them: ``buttons`` pause)."""
    text = truncate(escape(pause_text(p)), MESSAGE_LIMIT)
    payload = {"buttons": "pause", "run": p.run_id, "what": p.what, "extend": extend_label(p)}
    return Rendered(text, payload | {"layout": text_layout(text, WAITING)})


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


def pause_items(payload: dict[str, Any]) -> list[discord.ui.Item[Any]]:
    """Extend / Stop under a pause (the renderer's payload)."""
    run_id = str(payload.get("run", ""))
    what = str(payload.get("what", "cost"))
    return [ExtendButton(run_id, what, str(payload.get("extend", "Extend"))), StopButton(run_id)]


def _budget(interaction: discord.Interaction) -> BudgetDecisions:
    """The budget handlers of the bot that received ``interaction``."""
    return cast(BudgetDecisions, getattr(interaction.client, "budget"))  # noqa: B009


class BudgetDecisions(RunClicks):
    """Extend / Stop clicks."""

    async def decide(
        self, interaction: discord.Interaction, run_id: str, *, extend: str | None
    ) -> None:
        """Extend (``extend``: the limit reached) or stop (None) the paused run, if the
        clicker may; the pause then says who did it. Else a refusal only they see."""
        await self._answered(
            interaction,
            f"the budget of {run_id}",
            lambda: self._decide(interaction, run_id, extend),
        )

    async def _decide(
        self, interaction: discord.Interaction, run_id: str, extend: str | None
    ) -> None:
        svc = self.ctx.svc
        clicker = person(svc.settings.discord, interaction.user)
        act = people.extend if extend is not None else people.stop
        outcome = await act(svc, run_id, clicker, who=WHO)
        if isinstance(outcome, Refused):
            await self._tell(interaction, await named(self.ctx.links, outcome.reason))
            return
        line = outcome.said.render(escape, f"**{escape(clicker.name)}**")
        self._redraw_decided(interaction, run_id, line, "decided pause")
