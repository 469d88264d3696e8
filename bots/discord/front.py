"""Requests and replies: a mention of the bot in a channel, or ``/caramba task:<text>``,
becomes a run (``core.runs.people.request``, a worker plans it) shown in a thread
opened from the message; a message in a run's thread answers an agent's open question,
or else reaches the run's top agent (``people.reply``). Each is acknowledged at once (👀
on a mention, Discord's "thinking…" for the command) and the work is done after."""

from __future__ import annotations

import logging
import re

import discord

from bots.chat.intake import NotOpened, take_request
from bots.chat.ports import Place
from bots.discord.attachments import Attachments, refusal_text
from bots.discord.context import DiscordContext
from bots.discord.place import place_in
from bots.discord.text import NO_PINGS, escape, truncate
from core.runs import people
from core.runs.outcomes import NotDelivered
from core.types.people import Person

log = logging.getLogger(__name__)
HELP = "Mention me with a task, e.g. “@Caramba compare the three cheapest flights to Berlin”."
THREAD_NAME_LIMIT = 100
NO_THREAD = (
    "I could not open a thread for this request here; an admin can give me the "
    "Create Public Threads and Send Messages in Threads permissions."
)


class Front:
    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx
        self.attachments = Attachments(ctx.svc)

    def _heard(self, message: discord.Message) -> bool:
        """Not the bot's own messages; other bots' only if allowed."""
        me = self.ctx.client.user
        if me is None or message.author.id == me.id:
            return False
        allowed = self.ctx.svc.settings.discord.allow_bots
        return not message.author.bot or str(message.author.id) in allowed

    def _task(self, message: discord.Message) -> str:
        """The message's text without the bot's mention; other people and roles
        mentioned stay in it by name (the agents read names, not ids)."""
        me = self.ctx.client.user
        assert me is not None
        text = re.sub(rf"<@!?{me.id}>", "", message.content)
        for user in message.mentions:
            if user.id != me.id:
                name = f"@{user.display_name}"
                text = text.replace(f"<@{user.id}>", name).replace(f"<@!{user.id}>", name)
        for role in message.role_mentions:
            text = text.replace(f"<@&{role.id}>", f"@{role.name}")
        return text.strip()

    async def on_message(self, message: discord.Message) -> None:
        """A mention starts a request; a message in a run's thread goes to the run."""
        if not self._heard(message) or message.guild is None:
            return
        me = self.ctx.client.user
        mentioned = me is not None and any(u.id == me.id for u in message.mentions)
        run_id = None
        if isinstance(message.channel, discord.Thread):
            run_id = await self.ctx.run_in(message.channel)
        if run_id is None and not mentioned:
            return
        if not await self.ctx.links.first_time(f"message:{message.id}"):
            return  # another bot process took it
        if run_id is not None:
            self.ctx.spawn(self.reply(message, run_id))
        else:
            self.ctx.spawn(self.mention(message))

    # -- requests ------------------------------------------------------------------------

    async def mention(self, message: discord.Message) -> None:
        """👀, a thread opened from the message (or the thread it is in), the request;
        a mention without a task gets the help, as a reply."""
        task = self._task(message)
        if not task:
            await message.reply(HELP, mention_author=False, allowed_mentions=NO_PINGS)
            return
        try:
            await message.add_reaction("👀")
        except discord.HTTPException:
            log.warning("could not acknowledge message %s with a reaction", message.id)
        if isinstance(message.channel, discord.Thread):
            thread = message.channel
        else:
            try:
                thread = await message.create_thread(name=truncate(task, THREAD_NAME_LIMIT))
            except discord.HTTPException as exc:
                log.warning("could not open a thread from message %s: %s", message.id, exc)
                await message.reply(NO_THREAD, mention_author=False, allowed_mentions=NO_PINGS)
                return
        await self.request(task, message.author, thread, message.attachments)

    async def slash(self, interaction: discord.Interaction, task: str) -> None:
        """``/caramba task:<text>``: deferred at once ("thinking…"), then the request shown
        as the command's answer, with a thread opened from it."""
        await interaction.response.defer(thinking=True)
        said = f"{escape(interaction.user.display_name)} asked: {escape(task)}"
        await interaction.followup.send(truncate(said, 2000), wait=True, allowed_mentions=NO_PINGS)
        if isinstance(interaction.channel, discord.Thread):
            thread = interaction.channel
        else:
            # Not followup.send's WebhookMessage: discord.py gives it no guild.
            original = await interaction.original_response()
            thread = await original.create_thread(name=truncate(task, THREAD_NAME_LIMIT))
        await self.request(task, interaction.user, thread, [])

    async def request(
        self,
        task: str,
        user: discord.abc.User,
        thread: discord.Thread,
        files: list[discord.Attachment],
    ) -> None:
        """Record the request (its files in the run's workspace first) and show its run
        in ``thread`` (``bots.chat.intake``); why not, if it is not taken, is said there."""
        await self.ctx.links.remember_name(user.id, user.display_name)
        person = Person(str(user.id), user.display_name)
        place = Place(channel=str(thread.parent_id or thread.id), thread=str(thread.id))
        fetch = (lambda run_id: self.attachments.fetch(run_id, files)) if files else None
        opened = await take_request(
            self.ctx.relays, task, person, place, fetch, where=place_in(thread, thread.guild)
        )
        if isinstance(opened, NotOpened):
            said = f"❌ {escape(opened.reason)}" if opened.reason else ""
            text = said or refusal_text(opened.files, started=False)
            await thread.send(truncate(text, 2000), allowed_mentions=NO_PINGS)

    # -- replies in a run's thread -------------------------------------------------------

    async def _with_files(self, message: discord.Message, run_id: str, text: str) -> str:
        """``text``, and a list of the files attached once they are in the run's
        workspace (taken only while the run runs: agents read them)."""
        svc = self.ctx.svc
        if not message.attachments or not await people.takes_files(svc, run_id):
            return text
        fetched = await self.attachments.fetch(run_id, message.attachments)
        if fetched.refused:
            note = truncate(refusal_text(fetched.refused, started=True), 2000)
            await message.channel.send(note, allowed_mentions=NO_PINGS)
        return people.with_attached(svc, text, fetched.kept)

    async def reply(self, message: discord.Message, run_id: str) -> None:
        """The answer to an agent's open question, else a follow-up for the run's top
        agent; ✅ when delivered, else (once per person and run) why not."""
        text = await self._with_files(message, run_id, self._task(message))
        if not text:
            return
        author = Person(str(message.author.id), message.author.display_name)
        outcome = await people.reply(self.ctx.svc, run_id, text, author)
        if not isinstance(outcome, NotDelivered):
            await message.add_reaction("✅")
        elif outcome.first:
            await message.reply(
                escape(outcome.hint), mention_author=False, allowed_mentions=NO_PINGS
            )
