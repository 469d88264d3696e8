"""Team spend in Discord: a request over its channel's (or server's) monthly budget, in
its thread, with Approve spending / Deny (persistent buttons
``caramba:spend:<approve|deny>:<run>``, registered with the bot's other components) →
``core.runs.spend.approve_spend`` by the clicker (the budget's owner or an admin: core's
rule; others are refused in private); once decided the message is redrawn through the
run's outbox saying who decided. And ``/caramba-budget`` (a command of its own: Discord
gives a command options or subcommands, and ``/caramba`` takes its task as an option):
without ``usd`` it shows this channel's month; with it, an admin sets the budget of this
channel (or, ``scope:server``, of the server) with its owner (``owner``: a mention or a
user id; the admin by default)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

import discord
from discord import app_commands

from bots.chat.intentions import SpendAsk
from bots.chat.ports import Rendered
from bots.chat.spend_asks import APPROVE_LABEL, DENY_LABEL, decided_text
from bots.discord.approvals import named, person
from bots.discord.claims import Claimed
from bots.discord.layout import WAITING, text_layout
from bots.discord.place import place_in
from bots.discord.run_clicks import RunClicks
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from bots.discord.views import RUN
from core.runs import spend
from core.runs.outcomes import Refused
from core.types.figures import exact_cost
from core.types.people import Person
from core.types.place import Place

log = logging.getLogger(__name__)
COMMAND = "caramba-budget"
_LABELS: dict[str, tuple[str, discord.ButtonStyle]] = {
    "approve": (APPROVE_LABEL, discord.ButtonStyle.success),
    "deny": (DENY_LABEL, discord.ButtonStyle.danger),
}
BUDGET_WORD = "budget"
_AMOUNT = re.compile(r"^\$?(\d{1,9}(?:\.\d{1,2})?)$")
_USER = re.compile(r"^\s*(?:<@!?(\d{1,24})>|(\d{1,24}))\s*$")
NO_OWNER = "Name the owner with a mention (@someone) or their user id."
UNKNOWN_OWNER = "I do not know that person in this server: name a member of it."
NOT_HERE = "Budgets are set in a server's channel."


@dataclass(frozen=True)
class BudgetWords:
    """``/caramba task:budget …`` as Slack's ``/caramba budget …``: ``budget`` (this
    channel's month), ``budget $50``, ``budget $50 owner @ana``, ``budget server $500``
    (``workspace`` too)."""

    usd: float | None = None
    scope: Literal["channel", "server"] = "channel"
    owner: str = ""


def budget_words(text: str) -> BudgetWords | None:
    """The budget command ``text`` says, else None (not one: a task like "budget our
    offsite" stays a task)."""
    words = text.split()
    if not words or words[0].casefold() != BUDGET_WORD:
        return None
    said, rest = BudgetWords(), words[1:]
    while rest:
        word = rest.pop(0)
        if word.casefold() in ("server", "workspace", "guild"):
            said = replace(said, scope="server")
        elif word.casefold() == "channel":
            said = replace(said, scope="channel")
        elif word.casefold() == "owner" and rest and _USER.match(rest[0]):
            said = replace(said, owner=rest.pop(0))
        elif (amount := _AMOUNT.match(word.replace(",", ""))) is not None:
            said = replace(said, usd=float(amount[1]))
        else:
            return None
    return said


def ask_message(a: SpendAsk) -> Rendered:
    """The ask; the transport adds the buttons (``buttons``: ``spend_ask``)."""
    text = truncate(escape(a.text), MESSAGE_LIMIT - 100)
    payload = {"buttons": "spend_ask", "run": a.run_id}
    return Rendered(text, payload | {"layout": text_layout(text, WAITING)})


class SpendButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:spend:(?P<choice>approve|deny):{RUN}$",
):
    def __init__(self, choice: str, run_id: str) -> None:
        label, style = _LABELS[choice]
        custom_id = f"caramba:spend:{choice}:{run_id}"
        super().__init__(discord.ui.Button(label=label, style=style, custom_id=custom_id))
        self.choice, self.run_id = choice, run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> SpendButton:
        return cls(match["choice"], match["run"])

    async def callback(self, interaction: discord.Interaction) -> None:
        decisions = getattr(interaction.client, "spend")  # noqa: B009
        await decisions.decide(interaction, self.run_id, self.choice == "approve")


SPEND_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (SpendButton,)


def spend_items(payload: dict[str, Any]) -> list[discord.ui.Item[Any]]:
    """Approve spending / Deny under an ask."""
    run_id = str(payload.get("run", ""))
    return [SpendButton(choice, run_id) for choice in ("approve", "deny")]


class SpendDecisions(RunClicks):
    """The clicks' and the command's handler (the bot's ``spend``)."""

    async def decide(self, interaction: discord.Interaction, run_id: str, approve: bool) -> None:
        await self._answered(
            interaction,
            f"a spend ask of {run_id}",
            lambda: self._decide(interaction, run_id, approve),
        )

    async def _decide(self, interaction: discord.Interaction, run_id: str, approve: bool) -> None:
        svc = self.ctx.svc
        await self.ctx.links.remember_name(interaction.user.id, interaction.user.display_name)
        clicker = person(svc.settings.discord, interaction.user)
        outcome = await spend.approve_spend(svc, run_id, clicker, approve)
        if isinstance(outcome, spend.AskEnded):  # its run ended undecided: buttons go
            self._redraw_decided(interaction, run_id, escape(outcome.reason), "ended spend ask")
            return
        if isinstance(outcome, Refused):
            await self._tell(interaction, escape(outcome.reason))
            return
        line = decided_text(outcome.said.render(escape, f"**{escape(clicker.name)}**"))
        self._redraw_decided(interaction, run_id, line, "decided spend")

    async def budget(
        self,
        interaction: discord.Interaction,
        usd: float | None,
        scope: Literal["channel", "server"],
        owner: str,
    ) -> None:
        """``/caramba-budget``: the month shown (only to the asker), or a budget set (said
        in the channel); a refusal only the asker sees."""
        guild = interaction.guild
        if guild is None or interaction.channel is None:
            await interaction.response.send_message(NOT_HERE, ephemeral=True)
            return
        where = place_in(interaction.channel, guild)
        svc = self.ctx.svc
        user = interaction.user
        await self.ctx.links.remember_name(user.id, user.display_name)
        if usd is None:
            await interaction.response.send_message(
                truncate(await self.month_text(where), MESSAGE_LIMIT),
                ephemeral=True,
                allowed_mentions=NO_PINGS,
            )
            return
        chosen = Person(str(user.id), user.display_name)
        if owner.strip():
            found = _USER.match(owner)
            if found is None:
                await interaction.response.send_message(NO_OWNER, ephemeral=True)
                return
            owner_id = found[1] or found[2]
            name = await self.name_of(guild, owner_id)
            if not name:
                await interaction.response.send_message(UNKNOWN_OWNER, ephemeral=True)
                return
            chosen = Person(owner_id, name)
        done = await spend.set_budget(
            svc,
            person(svc.settings.discord, user),
            where,
            month_usd=usd,
            owner=chosen,
            scope="workspace" if scope == "server" else "channel",
        )
        if isinstance(done, Refused):
            said = await named(self.ctx.links, done.reason)
            await interaction.response.send_message(said, ephemeral=True, allowed_mentions=NO_PINGS)
            return
        await interaction.response.send_message(
            truncate(f"💰 {escape(done.line)}", MESSAGE_LIMIT), allowed_mentions=NO_PINGS
        )

    async def name_of(self, guild: discord.Guild, user_id: str) -> str:
        """``user_id``'s name here: as last seen by the bot, else the server's member."""
        known = (await self.ctx.links.names([user_id])).get(user_id)
        if known:
            return known
        member = guild.get_member(int(user_id))
        if member is None:
            try:
                member = await guild.fetch_member(int(user_id))
            except discord.HTTPException:
                return ""
        await self.ctx.links.remember_name(member.id, member.display_name)
        return member.display_name

    async def month_text(self, where: Place) -> str:
        """This channel's month: what it spent, its budgets and their use."""
        report = await spend.report(self.ctx.svc, channel_key=where.key)
        lines = [
            f"**{escape(where.shown())}** spent {exact_cost(report.total_usd)} in {report.month}"
            + (
                f" (and {exact_cost(report.under_way_usd)} in runs under way)"
                if report.under_way_usd
                else ""
            )
            + "."
        ]
        for use in report.budgets:
            b = use.budget
            owner = f", owner {escape(b.owner_name)}" if b.owner_name else ""
            lines.append(
                f"Budget of {escape(b.place_name)} ({b.scope}): {exact_cost(use.spent_usd)} "
                f"of {exact_cost(b.month_usd)} ({use.share:.0%}){owner}."
            )
        if not report.budgets:
            lines.append("No monthly budget applies here.")
        return "\n".join(lines)


def add_budget_command(tree: app_commands.CommandTree[Any], handlers: SpendDecisions) -> None:
    """``/caramba-budget``."""

    @app_commands.command(name=COMMAND, description="This channel's spend and monthly budget")
    @app_commands.describe(
        usd="A monthly budget in US dollars (admins); leave out to see this month",
        scope="Whose budget: this channel's (default) or the whole server's",
        owner="Who approves requests over it: a mention or a user id (default: you)",
    )
    async def command(
        interaction: discord.Interaction,
        usd: app_commands.Range[float, 0.0, 1_000_000.0] | None = None,
        scope: Literal["channel", "server"] = "channel",
        owner: str = "",
    ) -> None:
        await handlers.budget(interaction, usd, scope, owner)

    tree.add_command(command)


__all__ = [
    "COMMAND",
    "SPEND_ITEMS",
    "BudgetWords",
    "SpendButton",
    "SpendDecisions",
    "add_budget_command",
    "ask_message",
    "budget_words",
    "spend_items",
]
