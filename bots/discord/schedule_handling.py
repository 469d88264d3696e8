"""What every Discord schedule handler shares: the person and the place (the channel, a
thread's parent) of an interaction, answers told to the person alone, a failure logged and
told (never Discord's "This interaction failed"), and what became of an action in plain
words. The slash command is ``bots.discord.schedules``; the list's buttons and the forms
are ``bots.discord.schedule_clicks``."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar, assert_never

import discord

from bots.discord.approvals import person
from bots.discord.context import DiscordContext
from bots.discord.place import place_in
from bots.discord.schedule_items import Action
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from core.config_schedules import ScheduleSettings
from core.runs import schedules as plans
from core.runs.outcomes import Refused
from core.runs.schedules import ScheduleOutcome
from core.types.people import Person
from core.types.place import Place
from core.types.schedules import Changed, NotUnderstood, Scheduled

log = logging.getLogger(__name__)
P = ParamSpec("P")
H = TypeVar("H", bound="ScheduleHandling")
NEEDS_WHEN = "Say when, e.g. `when: every weekday at 9:00` (or a cron line such as `0 9 * * 1-5`)."


def reported(
    handler: Callable[Concatenate[H, discord.Interaction, P], Awaitable[None]],
) -> Callable[Concatenate[H, discord.Interaction, P], Awaitable[None]]:
    """A handler whose failure is logged and told to the person (not left as Discord's
    "This interaction failed")."""

    @functools.wraps(handler)
    async def guarded(
        self: H, interaction: discord.Interaction, *args: P.args, **kwargs: P.kwargs
    ) -> None:
        try:
            await handler(self, interaction, *args, **kwargs)
        except Exception as exc:
            log.exception("handling %s of a schedule failed", handler.__name__)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    return guarded


class ScheduleHandling:
    """A base for the bot's schedule handlers."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    @property
    def _settings(self) -> ScheduleSettings:
        return self.ctx.svc.settings.schedules

    def _person(self, interaction: discord.Interaction) -> Person:
        return person(self.ctx.svc.settings.discord, interaction.user)

    def _place(self, interaction: discord.Interaction) -> Place:
        """The channel of ``interaction`` (a thread's parent: firings open their own)."""
        found = place_in(interaction.channel, interaction.guild, interaction.channel_id)
        return found.model_copy(update={"thread": ""})

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        """A message only the person sees (``text`` already escaped)."""
        text = truncate(text, MESSAGE_LIMIT)
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)

    async def _said(self, interaction: discord.Interaction, outcome: ScheduleOutcome) -> None:
        await self._tell(interaction, said(outcome))


def said(outcome: ScheduleOutcome) -> str:
    """What became of a person's action, in Discord markdown (core's words escaped)."""
    match outcome:
        case Scheduled(line=line) | Changed(line=line):
            return "✅ " + escape(line)
        case NotUnderstood(words=words, hint=hint):
            return f"❓ I could not read “{escape(words)}” as a schedule. {escape(hint)}"
        case Refused(reason=reason):
            return "🚫 " + escape(reason)
        case _:
            assert_never(outcome)


def act(action: Action) -> Callable[..., Awaitable[ScheduleOutcome]]:
    """The schedules room's call for a list button's (or the command's) ``action``."""
    return {"pause": plans.pause, "resume": plans.resume, "delete": plans.delete}[action]
