"""Several ``caramba discord`` processes may run on one token (they share the runs through
the chat layer's leases), and Discord sends every interaction — a click, a select, the
slash command — to each of them. The first process to claim the interaction's id in Redis
answers it; the others leave it alone (a second answer is refused by Discord, and the
clicker would be told that something failed)."""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands


async def answered_here(interaction: discord.Interaction) -> bool:
    """Whether this process answers ``interaction`` (the first to claim it)."""
    links = getattr(interaction.client, "links", None)
    if links is None:
        return True
    claimed: bool = await links.first_time(f"interaction:{interaction.id}")
    return claimed


class Claimed:
    """For a persistent component (a ``discord.ui.DynamicItem``, listed first among its
    bases): its callback runs only in the process that claimed the interaction."""

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return await answered_here(interaction)


class ClaimingTree(app_commands.CommandTree[Any]):
    """The slash commands, answered only by the process that claimed each interaction."""

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return await answered_here(interaction)
