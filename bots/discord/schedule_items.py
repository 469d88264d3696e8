"""Schedules' persistent components in Discord: "Run this every…" under a finished run's
result (``caramba:every:<run id>``), Pause / Resume / Edit / Delete beside each schedule
of a list (``caramba:sched:<action>:<schedule id>``), and the forms the first and Edit
open: when, the time zone and the budget per firing.
Each click is handed to the bot's :class:`bots.discord.schedules.Schedules`; the
components carry their ids in ``custom_id``, so a list posted before a restart still
works (the form, like the edit form, lives in the process that opened it)."""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol, cast

import discord

from bots.discord.claims import Claimed
from bots.discord.views import RUN

SCHEDULE = r"(?P<schedule>[0-9A-Za-z_-]{1,60})"
EVERY_LABEL = "Run this every…"
Action = Literal["pause", "resume", "delete"]
_LABELS: dict[str, tuple[str, discord.ButtonStyle]] = {
    "pause": ("Pause", discord.ButtonStyle.secondary),
    "resume": ("Resume", discord.ButtonStyle.success),
    "delete": ("Delete", discord.ButtonStyle.danger),
}
INPUT_LIMIT = 4000
WHEN_HINT = "every weekday at 9:00, or a cron line: 0 9 * * 1-5"


class Handlers(Protocol):
    """What schedules' clicks and forms do (``bots.discord.schedules``)."""

    async def every(self, interaction: discord.Interaction, run_id: str) -> None: ...
    async def change(
        self, interaction: discord.Interaction, schedule_id: str, action: Action
    ) -> None: ...
    async def submit_every(
        self, interaction: discord.Interaction, run_id: str, values: dict[str, str]
    ) -> None: ...
    async def edit(self, interaction: discord.Interaction, schedule_id: str) -> None: ...
    async def submit_edit(
        self, interaction: discord.Interaction, schedule_id: str, values: dict[str, str]
    ) -> None: ...


def handlers(interaction: discord.Interaction) -> Handlers:
    """The schedule handlers of the bot that received ``interaction``."""
    return cast(Handlers, getattr(interaction.client, "schedules"))  # noqa: B009


class EveryButton(
    Claimed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=rf"^caramba:every:{RUN}$"
):
    """Under a finished run's result: a form to run it again on a schedule."""

    def __init__(self, run_id: str) -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=EVERY_LABEL,
            style=discord.ButtonStyle.secondary,
            custom_id=f"caramba:every:{run_id}",
        )
        super().__init__(button)
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> EveryButton:
        return cls(match["run"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).every(interaction, self.run_id)


class ScheduleButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:sched:(?P<action>pause|resume|delete):{SCHEDULE}$",
):
    """Pause, Resume or Delete beside a schedule in a list."""

    def __init__(self, schedule_id: str, action: Action) -> None:
        label, style = _LABELS[action]
        button: discord.ui.Button[Any] = discord.ui.Button(
            label=label, style=style, custom_id=f"caramba:sched:{action}:{schedule_id}"[:100]
        )
        super().__init__(button)
        self.schedule_id, self.action = schedule_id, action

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ScheduleButton:
        return cls(match["schedule"], cast(Action, match["action"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).change(interaction, self.schedule_id, self.action)


class EditScheduleButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:sched:edit:{SCHEDULE}$",
):
    """Edit beside a schedule in a list: a form with its when, time zone and budget."""

    def __init__(self, schedule_id: str) -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label="Edit",
            style=discord.ButtonStyle.secondary,
            custom_id=f"caramba:sched:edit:{schedule_id}"[:100],
        )
        super().__init__(button)
        self.schedule_id = schedule_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> EditScheduleButton:
        return cls(match["schedule"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).edit(interaction, self.schedule_id)


SCHEDULE_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (
    EveryButton,
    ScheduleButton,
    EditScheduleButton,
)


def every_view(run_id: str) -> discord.ui.View:
    """The "Run this every…" button, under a result."""
    view = discord.ui.View(timeout=None)
    view.add_item(EveryButton(run_id))
    return view


def _input(
    key: str, label: str, default: str = "", *, placeholder: str = "", required: bool = False
) -> discord.ui.TextInput[Any]:
    return discord.ui.TextInput(
        label=label,
        custom_id=key,
        style=discord.TextStyle.paragraph if key == "task" else discord.TextStyle.short,
        default=default[:INPUT_LIMIT] or None,
        placeholder=placeholder[:100] or None,
        required=required,
        max_length=INPUT_LIMIT if key == "task" else 200,
    )


class _Form(discord.ui.Modal):
    def values(self) -> dict[str, str]:
        return {
            str(item.custom_id): (item.value or "").strip()
            for item in self.children
            if isinstance(item, discord.ui.TextInput)
        }


class EveryModal(_Form):
    """When and with what budget per firing run ``run_id`` again (a schedule)."""

    def __init__(self, run_id: str, tz: str, budget: str) -> None:
        super().__init__(title=EVERY_LABEL, custom_id=f"caramba:every-form:{run_id}", timeout=900)
        self.run_id = run_id
        self.add_item(_input("when", "When", placeholder=WHEN_HINT, required=True))
        self.add_item(_input("tz", "Time zone", tz, placeholder="Europe/Paris"))
        self.add_item(_input("budget", "Budget per firing (USD)", budget, placeholder="2.00"))

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).submit_every(interaction, self.run_id, self.values())


class EditScheduleModal(_Form):
    """A schedule's when, time zone and budget per firing, as they are, to change."""

    def __init__(self, schedule_id: str, when: str, tz: str, budget: str) -> None:
        super().__init__(
            title="Edit the schedule", custom_id=f"caramba:sched-form:{schedule_id}"[:100],
            timeout=900,
        )  # fmt: skip
        self.schedule_id = schedule_id
        self.add_item(_input("when", "When", when, placeholder=WHEN_HINT, required=True))
        self.add_item(_input("tz", "Time zone", tz, placeholder="Europe/Paris"))
        self.add_item(_input("budget", "Budget per firing (USD)", budget, placeholder="2.00"))

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).submit_edit(interaction, self.schedule_id, self.values())
