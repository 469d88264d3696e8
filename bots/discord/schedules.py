"""Schedules from Discord: ``/caramba-schedule`` (``action``: add with when / task /
budget, list, pause, resume, edit, delete), "Run this every…" under a finished run's
result (a form: when, time zone, budget per firing), and a list whose Pause / Resume /
Delete buttons act on each schedule, and whose Edit opens a form (when, time zone,
budget) for its owner or an approver. Every change is one call of the schedules room
(``core.runs.schedules``, where the rule lives: only the owner or an approver may change
one); a refusal is told, in plain words, only to the person who asked. Discord's
approvers (``[discord] approvers`` / ``approver_roles``) are marked on the ``Person``.

A schedule's place is the channel (the parent of a thread): its firings post there, a
thread per firing (``bots.chat``'s delivery of firings)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, Literal, ParamSpec, assert_never

import discord
from discord import app_commands

from bots.chat.schedule_command import answer
from bots.discord.approvals import person
from bots.discord.context import DiscordContext
from bots.discord.schedule_items import Action, EditScheduleModal, EveryModal
from bots.discord.schedule_list import list_view
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, escape, truncate
from core.config_schedules import ScheduleSettings
from core.runs import schedules as plans
from core.types.people import Person
from core.types.place import Place
from core.types.schedules import (
    Changed,
    NotUnderstood,
    Refused,
    Scheduled,
    ScheduleOutcome,
)

log = logging.getLogger(__name__)
P = ParamSpec("P")
COMMAND = "caramba-schedule"
Verb = Literal["add", "list", "pause", "resume", "edit", "delete"]
NEEDS_WHEN = "Say when, e.g. `when: every weekday at 9:00` (or a cron line such as `0 9 * * 1-5`)."
NEEDS_TASK = "Say what to run: `task: …` (or press “Run this every…” under a finished run)."
NEEDS_ID = "Say which schedule: `schedule:` and its id, as `/caramba-schedule action:list` shows."
NOTHING_TO_EDIT = "Say what to change: `when`, `budget` or `task`."


def _reported(
    handler: Callable[Concatenate[Schedules, discord.Interaction, P], Awaitable[None]],
) -> Callable[Concatenate[Schedules, discord.Interaction, P], Awaitable[None]]:
    """A handler whose failure is logged and told to the person (not left as Discord's
    "This interaction failed")."""

    @functools.wraps(handler)
    async def guarded(
        self: Schedules, interaction: discord.Interaction, *args: P.args, **kwargs: P.kwargs
    ) -> None:
        try:
            await handler(self, interaction, *args, **kwargs)
        except Exception as exc:
            log.exception("handling %s of a schedule failed", handler.__name__)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    return guarded


def _money(text: str) -> float | str | None:
    """A budget typed in a form: dollars (``2``, ``$2.50``), None when left empty, else
    what is wrong with it."""
    text = text.strip().removeprefix("$").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return f"“{text}” is not an amount in US dollars; write one such as 2.50."
    if not 0 < value < 1e6:
        return "Write a budget per firing above $0, such as 2.50."
    return value


class Schedules:
    """The bot's schedule handlers (``bots.discord.schedule_items.Handlers``)."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    @property
    def _settings(self) -> ScheduleSettings:
        return self.ctx.svc.settings.schedules

    def _person(self, interaction: discord.Interaction) -> Person:
        return person(self.ctx.svc.settings.discord, interaction.user)

    def _place(self, interaction: discord.Interaction) -> Place:
        """The channel of ``interaction`` (a thread's parent: firings open their own)."""
        channel = interaction.channel
        parent = channel.parent if isinstance(channel, discord.Thread) else channel
        channel_id = str(getattr(parent, "id", None) or interaction.channel_id or "")
        name = getattr(parent, "name", "") or ""
        guild = interaction.guild
        return Place(
            platform="discord",
            workspace=str(interaction.guild_id or "dm"),
            channel=channel_id,
            workspace_name=guild.name if guild is not None else "",
            channel_name=f"#{name}" if name else "",
        )

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        """A message only the person sees (``text`` already escaped)."""
        text = truncate(text, MESSAGE_LIMIT)
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)

    # -- the slash command ---------------------------------------------------------------

    @_reported
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
                outcome = await _act(action)(svc, schedule.strip(), who)
        await self._said(interaction, outcome)

    async def _said(self, interaction: discord.Interaction, outcome: ScheduleOutcome) -> None:
        await self._tell(interaction, said(outcome))

    async def _list(self, interaction: discord.Interaction) -> None:
        listed = await plans.listed(self.ctx.svc, self._place(interaction))
        view = list_view(listed.schedules, self._place(interaction).channel)
        await interaction.response.send_message(
            view=view, ephemeral=True, allowed_mentions=NO_PINGS
        )

    @_reported
    async def typed(self, interaction: discord.Interaction, text: str) -> None:
        """``/caramba task:schedule …``: the words every platform takes
        (``bots.chat.schedule_command``), answered to the person alone."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self.ctx.links.remember_name(interaction.user.id, interaction.user.display_name)
        said_ = await answer(
            self.ctx.svc, self._person(interaction), self._place(interaction), text
        )
        await self._tell(interaction, escape(said_))

    # -- the list's buttons --------------------------------------------------------------

    @_reported
    async def change(
        self, interaction: discord.Interaction, schedule_id: str, action: Action
    ) -> None:
        """Pause / Resume / Delete on a list: the list redrawn as it is now and the
        change said to the clicker alone, or why not."""
        await interaction.response.defer()
        outcome = await _act(action)(self.ctx.svc, schedule_id, self._person(interaction))
        if isinstance(outcome, Changed):
            place = self._place(interaction)
            listed = await plans.listed(self.ctx.svc, place)
            view = list_view(listed.schedules, place.channel)
            await interaction.edit_original_response(view=view, allowed_mentions=NO_PINGS)
        await self._tell(interaction, said(outcome))

    @_reported
    async def edit(self, interaction: discord.Interaction, schedule_id: str) -> None:
        """Edit on a list: the form with the schedule as it is, for its owner or an
        approver; anyone else is told why not (a modal answers the click: no defer)."""
        found = await plans.store(self.ctx.svc).get(schedule_id)
        if found is None:
            await self._tell(interaction, said(Refused("That schedule no longer exists.")))
            return
        refusal = plans.may_change(self.ctx.svc, found, self._person(interaction))
        if refusal is not None:
            await self._tell(interaction, said(Refused(refusal)))
            return
        form = EditScheduleModal(found.id, found.rule.words, found.rule.tz, f"{found.budget_usd:g}")
        await interaction.response.send_modal(form)

    @_reported
    async def submit_edit(
        self, interaction: discord.Interaction, schedule_id: str, values: dict[str, str]
    ) -> None:
        """The edit form sent: what differs is changed (core guards the owner rule again)."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        budget = _money(values.get("budget", ""))
        if isinstance(budget, str):
            await self._tell(interaction, escape(budget))
            return
        outcome = await plans.edit_form(
            self.ctx.svc,
            schedule_id,
            self._person(interaction),
            when=values.get("when", ""),
            tz=values.get("tz", ""),
            budget_usd=budget,
        )
        await self._said(interaction, outcome)

    # -- "Run this every…" ---------------------------------------------------------------

    @_reported
    async def every(self, interaction: discord.Interaction, run_id: str) -> None:
        """The form (a modal answers the click: no defer before it)."""
        s = self._settings
        await interaction.response.send_modal(
            EveryModal(run_id, s.default_tz, f"{s.default_budget_usd:g}")
        )

    @_reported
    async def submit_every(
        self, interaction: discord.Interaction, run_id: str, values: dict[str, str]
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        when = values.get("when", "")
        budget = _money(values.get("budget", ""))
        if not when:
            await self._tell(interaction, NEEDS_WHEN)
            return
        if isinstance(budget, str):
            await self._tell(interaction, escape(budget))
            return
        await self.ctx.links.remember_name(interaction.user.id, interaction.user.display_name)
        outcome = await plans.schedule(
            self.ctx.svc,
            self._person(interaction),
            self._place(interaction),
            from_run=run_id,
            when=when,
            tz=values.get("tz", "") or None,
            budget_usd=budget,
        )
        await self._said(interaction, outcome)


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


def _act(action: Action) -> Callable[..., Awaitable[ScheduleOutcome]]:
    return {"pause": plans.pause, "resume": plans.resume, "delete": plans.delete}[action]


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
