"""The bot's persistent components: Approve / Edit / Reject on a proposal card, the Edit
button beside each agent of it, Cancel on a run's status message, and the select that
picks the agent to edit. Each carries its
run's id in its ``custom_id`` (a ``discord.ui.DynamicItem``), so a click works on any
message the bot ever sent, after a restart too: the bot registers these classes when it
starts (``Client.add_dynamic_items``), and each click is handed to the bot's
:class:`Handlers`."""

from __future__ import annotations

import re
from typing import Any, Protocol, cast

import discord

from bots.discord.claims import Claimed
from bots.discord.text import truncate

RUN = r"(?P<run>run_[0-9a-z]{1,40})"
MESSAGE = r"(?P<message>\d{1,24})"
AGENT = r"(?P<agent>[0-9A-Za-z_-]{1,60})"


class Handlers(Protocol):
    """What a click does (``bots.discord.decisions``)."""

    async def approve(self, interaction: discord.Interaction, run_id: str) -> None: ...
    async def reject(self, interaction: discord.Interaction, run_id: str) -> None: ...
    async def edit(self, interaction: discord.Interaction, run_id: str) -> None: ...
    async def cancel(self, interaction: discord.Interaction, run_id: str) -> None: ...
    async def pick(
        self, interaction: discord.Interaction, run_id: str, card_id: int, agent_id: str
    ) -> None: ...


def handlers(interaction: discord.Interaction) -> Handlers:
    """The handlers of the bot that received ``interaction``."""
    return cast(Handlers, getattr(interaction.client, "handlers"))  # noqa: B009


class _RunButton(Claimed, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"^$"):
    """A button whose custom_id is ``caramba:<action>:<run id>``."""

    action = ""
    label = ""
    style = discord.ButtonStyle.secondary

    def __init__(self, run_id: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=self.label, style=self.style, custom_id=f"caramba:{self.action}:{run_id}"
            )
        )
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> _RunButton:
        return cls(match["run"])


class ApproveButton(_RunButton, template=rf"^caramba:approve:{RUN}$"):
    action, label, style = "approve", "Approve", discord.ButtonStyle.success

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).approve(interaction, self.run_id)


class EditButton(_RunButton, template=rf"^caramba:edit:{RUN}$"):
    action, label, style = "edit", "Edit", discord.ButtonStyle.secondary

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).edit(interaction, self.run_id)


class RejectButton(_RunButton, template=rf"^caramba:reject:{RUN}$"):
    action, label, style = "reject", "Reject", discord.ButtonStyle.danger

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).reject(interaction, self.run_id)


class CancelButton(_RunButton, template=rf"^caramba:cancel:{RUN}$"):
    action, label, style = "cancel", "Cancel", discord.ButtonStyle.danger

    async def callback(self, interaction: discord.Interaction) -> None:
        await handlers(interaction).cancel(interaction, self.run_id)


class AgentEditButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:agent:{RUN}:{AGENT}$",
):
    """Edit, beside one agent of the card: its form at once (the card is the message)."""

    def __init__(self, run_id: str, agent_id: str) -> None:
        button: discord.ui.Button[Any] = discord.ui.Button(
            label="Edit",
            style=discord.ButtonStyle.secondary,
            custom_id=f"caramba:agent:{run_id}:{agent_id}"[:100],
        )
        super().__init__(button)
        self.run_id, self.agent_id = run_id, agent_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> AgentEditButton:
        return cls(match["run"], match["agent"])

    async def callback(self, interaction: discord.Interaction) -> None:
        card_id = interaction.message.id if interaction.message else 0
        await handlers(interaction).pick(interaction, self.run_id, card_id, self.agent_id)


class AgentSelect(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Select[Any]],
    template=rf"^caramba:pick:{RUN}:{MESSAGE}$",
):
    """Which agent to edit; ``message``: the card to update once edited."""

    def __init__(
        self, run_id: str, card_id: int, agents: list[tuple[str, str]] | None = None
    ) -> None:
        options = [
            discord.SelectOption(label=truncate(name, 100), value=agent_id)
            for agent_id, name in (agents or [])[:25]
        ]
        select: discord.ui.Select[Any] = discord.ui.Select(
            custom_id=f"caramba:pick:{run_id}:{card_id}",
            placeholder="The agent to edit",
            options=options or [discord.SelectOption(label="-", value="-")],
        )
        super().__init__(select)
        self.run_id, self.card_id = run_id, card_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> AgentSelect:
        return cls(match["run"], int(match["message"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        agent_id = self.item.values[0] if self.item.values else ""
        await handlers(interaction).pick(interaction, self.run_id, self.card_id, agent_id)


DYNAMIC_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (
    ApproveButton,
    EditButton,
    RejectButton,
    CancelButton,
    AgentSelect,
    AgentEditButton,
)


def cancel_view(run_id: str) -> discord.ui.View:
    """Cancel, under a running run's status message."""
    view = discord.ui.View(timeout=None)
    view.add_item(CancelButton(run_id))
    return view


def pick_view(run_id: str, card_id: int, agents: list[tuple[str, str]]) -> discord.ui.View:
    """The select of the agent to edit (``agents``: id and name)."""
    view = discord.ui.View(timeout=None)
    view.add_item(AgentSelect(run_id, card_id, agents))
    return view
