"""Schedules' firings in Discord: each firing of a schedule whose place is a Discord
channel is a new top-level message there ("Scheduled run (every weekday at 9:00) by
**Ana**: …"), a thread opened from it, and the run shown in that thread as a mention's is
(the card when it asks for approval, progress, the result).

The shared reading of the firings stream (one process posts each firing, the last hour
read again on start) is ``bots.chat.schedules``; what is Discord's own here is opening
the thread from the message, which ``FiringDelivery.deliver`` cannot do through the
transport alone. A bot that may not open threads there (missing permission) shows the
run in the channel itself, under the message, and logs why."""

from __future__ import annotations

import logging

import discord

from bots.chat.ports import Place
from bots.chat.relays import Relays
from bots.chat.schedules import BLOCK_MS, FiringDelivery, announcement
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS, truncate
from core.types.schedules import Firing

log = logging.getLogger(__name__)
THREAD_NAME_LIMIT = 100


class DiscordFirings(FiringDelivery):
    """The firings of Discord schedules, posted by the bot ``client``."""

    def __init__(
        self, client: discord.Client, relays: Relays, *, block_ms: int | None = BLOCK_MS
    ) -> None:
        super().__init__(relays, block_ms=block_ms)
        self.client = client

    async def _channel(self, channel_id: int) -> discord.TextChannel:
        found = self.client.get_channel(channel_id)
        if found is None:
            found = await self.client.fetch_channel(channel_id)
        if not isinstance(found, discord.TextChannel):
            raise TypeError(f"channel {channel_id} is not a text channel a thread opens in")
        return found

    async def deliver(self, entry_id: str, firing: Firing) -> bool:
        """The message, its thread and the run relayed there; False if the firing is
        another platform's or another process posted it."""
        if not await self.mine(entry_id, firing):
            return False
        relays = self.relays
        channel = await self._channel(int(firing.place.channel))
        text = truncate(announcement(relays, firing), MESSAGE_LIMIT)
        message = await channel.send(text, allowed_mentions=NO_PINGS)
        name = truncate(f"{firing.words}: {firing.task}", THREAD_NAME_LIMIT)
        try:
            thread = await message.create_thread(name=name)
        except discord.HTTPException as exc:
            # No thread (the bot may not open one here): the run is shown in the channel.
            log.warning(
                "schedule %s: no thread in #%s (%s %s); its run is shown in the channel",
                firing.schedule_id,
                getattr(channel, "name", channel.id),
                exc.status,
                exc.text,
            )
            return await relays.open(firing.run_id, Place(channel=str(channel.id), thread=""))
        return await relays.open(
            firing.run_id, Place(channel=str(channel.id), thread=str(thread.id))
        )
