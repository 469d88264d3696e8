"""Schedules from Discord: ``/caramba-schedule`` (``action``: add with when / task /
budget, list, pause, resume, edit, delete), "Run this every…" under a finished run's
result (a form: when, time zone, budget per firing), and a list whose Pause / Resume /
Delete buttons act on each schedule, and whose Edit opens a form (when, time zone,
budget) for its owner or an approver. Every change is one call of the schedules room
(``core.runs.schedules``, where the rule lives: only the owner or an approver may change
one); a refusal is told, in plain words, only to the person who asked. Discord's
approvers (``[discord] approvers`` / ``approver_roles``) are marked on the ``Person``.

A schedule's place is the channel (the parent of a thread): its firings post there, a
thread per firing (``bots.chat``'s delivery of firings). This module is the slash command;
the list's buttons and the forms are ``bots.discord.schedule_clicks``, what both share
``bots.discord.schedule_handling``."""

from __future__ import annotations

from typing import Any, Literal

import discord
from discord import app_commands

from bots.chat.schedule_command import answer
from bots.discord.schedule_clicks import ScheduleClicks
from bots.discord.schedule_handling import NEEDS_WHEN, act, reported
from bots.discord.schedule_list import list_view
from bots.discord.text import NO_PINGS, escape
from core.runs import schedules as plans
from core.runs.schedules import ScheduleOutcome

COMMAND = "caramba-schedule"
Verb = Literal["add", "list", "pause", "resume", "edit", "delete"]
NEEDS_TASK = "Say what to run: `task: …` (or press “Run this every…” under a finished run)."
NEEDS_ID = "Say which schedule: `schedule:` and its id, as `/caramba-schedule action:list` shows."
NOTHING_TO_EDIT = "Say what to change: `when`, `budget` or `task`."


class Schedules(ScheduleClicks):
    """The bot's schedule handlers: ``/caramba-schedule`` and the schedule words of
    ``/caramba`` here, the list's buttons and the forms in ``ScheduleClicks``."""

    # -- the slash command ---------------------------------------------------------------

    @reported
    async def slash(
        self,
        interaction: discord.Interaction,
        action: Verb,
        *,
        when: str = "",
        task: str = "",
        budget: float | None = None,
        tz: str = "",
        schedule: str = "",
    ) -> None:
        """``/caramba-schedule``: each action said back to the person alone (the list
        too: its buttons act for whoever clicks them)."""
        await self.ctx.links.remember_name(interaction.user.id, interaction.user.display_name)
        if action == "list":
            await self._list(interaction)  # one read: answered at once, as a new message
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        who = self._person(interaction)
        svc = self.ctx.svc
        outcome: ScheduleOutcome
        match action:
            case "add":
                if not when.strip():
                    await self._tell(interaction, NEEDS_WHEN)
                    return
                if not task.strip():
                    await self._tell(interaction, NEEDS_TASK)
                    return
                outcome = await plans.schedule(
                    svc,
                    who,
                    self._place(interaction),
                    task=task.strip(),
                    when=when.strip(),
                    tz=tz.strip() or None,
                    budget_usd=budget,
                )
            case "edit":
                if not schedule.strip():
                    await self._tell(interaction, NEEDS_ID)
                    return
                if not (when.strip() or task.strip() or tz.strip() or budget is not None):
                    await self._tell(interaction, NOTHING_TO_EDIT)
                    return
                outcome = await plans.edit(
                    svc,
                    schedule.strip(),
                    who,
                    when=when.strip() or None,
                    tz=tz.strip() or None,
                    budget_usd=budget,
                    task=task.strip() or None,
                )
            case "pause" | "resume" | "delete":
                if not schedule.strip():
                    await self._tell(interaction, NEEDS_ID)
                    return
                outcome = await act(action)(svc, schedule.strip(), who)
        await self._said(interaction, outcome)

    async def _list(self, interaction: discord.Interaction) -> None:
        listed = await plans.listed(self.ctx.svc, self._place(interaction))
        view = list_view(listed.schedules, self._place(interaction).channel)
        await interaction.response.send_message(
            view=view, ephemeral=True, allowed_mentions=NO_PINGS
        )

    @reported
    async def typed(self, interaction: discord.Interaction, text: str) -> None:
        """``/caramba task:schedule …``: the words every platform takes
        (``bots.chat.schedule_command``), answered to the person alone."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self.ctx.links.remember_name(interaction.user.id, interaction.user.display_name)
        said_ = await answer(
            self.ctx.svc, self._person(interaction), self._place(interaction), text
        )
        await self._tell(interaction, escape(said_))


def add_schedule_command(tree: app_commands.CommandTree[Any], handlers: Schedules) -> None:
    """``/caramba-schedule``: one command with an ``action`` (Discord gives a command
    either options or subcommands, and ``/caramba`` takes its task as an option)."""

    @app_commands.command(name=COMMAND, description="Run a task on a schedule in this channel")
    @app_commands.describe(
        action="add, list, pause, resume, edit or delete (default: list)",
        when="When it runs: “every weekday at 9:00”, or cron “0 9 * * 1-5”",
        task="What the agents should do each time",
        budget="The most one firing may spend, in US dollars",
        tz="The time zone of `when`, e.g. Europe/Paris",
        schedule="Which schedule (its id, as the list shows)",
    )
    async def command(
        interaction: discord.Interaction,
        action: Verb = "list",
        when: str = "",
        task: str = "",
        budget: app_commands.Range[float, 0.01, 1_000_000.0] | None = None,
        tz: str = "",
        schedule: str = "",
    ) -> None:
        await handlers.slash(
            interaction, action, when=when, task=task, budget=budget, tz=tz, schedule=schedule
        )

    tree.add_command(command)
