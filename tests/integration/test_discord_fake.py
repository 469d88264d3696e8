"""The local Discord (tests/fakes/discord_api.py) driven by a real discord.py 2.7 client:
connect and become ready, mentions and threads, persistent buttons across a restart,
selects and modals, slash commands synced and invoked, files, embeds, edits, reactions,
429s waited out, a resumed gateway session, and Discord's refusals."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fakes.discord_api import FakeDiscord

APPROVE, EDIT, REJECT, PICK = "caramba:approve", "caramba:edit", "caramba:reject", "caramba:pick"
NO_PINGS = discord.AllowedMentions.none()


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord.serving() as served:
        yield served


def intents(*, content: bool = True) -> discord.Intents:
    wanted = discord.Intents.none()
    wanted.guilds = wanted.guild_messages = wanted.guild_reactions = True
    wanted.message_content = content
    return wanted


def make_bot(seen: list[Any], *, content: bool = True) -> commands.Bot:
    """A bot whose persistent card view is registered on start (as after a restart)."""

    class Bot(commands.Bot):
        async def setup_hook(self) -> None:
            self.add_view(Card(seen))

    # guild_ready_timeout: discord.py waits this long after the last GUILD_CREATE (2 s).
    return Bot(command_prefix="!", intents=intents(content=content), guild_ready_timeout=0.05)


def general(bot: discord.Client, fake: FakeDiscord) -> discord.TextChannel:
    channel = bot.get_channel(int(fake.channel("general")["id"]))
    assert isinstance(channel, discord.TextChannel)
    return channel


class Instructions(discord.ui.Modal, title="Edit the researcher"):
    prompt: discord.ui.TextInput[Instructions] = discord.ui.TextInput(
        label="Instructions", style=discord.TextStyle.paragraph, custom_id="prompt"
    )
    budget: discord.ui.TextInput[Instructions] = discord.ui.TextInput(
        label="Budget (USD)", custom_id="budget", required=False, default="1.0"
    )

    def __init__(self, seen: list[Any]) -> None:
        super().__init__(custom_id="caramba:modal", timeout=None)
        self.seen = seen

    async def on_submit(self, interaction: discord.Interaction) -> None:
        self.seen.append(("submitted", self.prompt.value, self.budget.value))
        await interaction.response.send_message("Saved.", ephemeral=True)


class Pick(discord.ui.View):
    def __init__(self, seen: list[Any]) -> None:
        super().__init__(timeout=None)
        self.seen = seen

    @discord.ui.select(
        custom_id=PICK,
        options=[
            discord.SelectOption(label="Researcher", value="a1"),
            discord.SelectOption(label="Writer", value="a2"),
        ],
    )
    async def pick(self, interaction: discord.Interaction, select: discord.ui.Select[Any]) -> None:
        self.seen.append(("picked", select.values))
        await interaction.response.send_modal(Instructions(self.seen))


class Card(discord.ui.View):
    """The approval card's buttons: persistent (timeout=None, fixed custom_ids)."""

    def __init__(self, seen: list[Any]) -> None:
        super().__init__(timeout=None)
        self.seen = seen

    @discord.ui.button(label="Approve", style=discord.ButtonStyle.success, custom_id=APPROVE)
    async def approve(
        self, interaction: discord.Interaction, button: discord.ui.Button[Any]
    ) -> None:
        roles = [r.name for r in getattr(interaction.user, "roles", [])]
        self.seen.append(("approve", interaction.user.name, roles))
        await interaction.response.defer()
        await interaction.edit_original_response(content="Approved by a reviewer.")

    @discord.ui.button(label="Edit", style=discord.ButtonStyle.secondary, custom_id=EDIT)
    async def edit(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        self.seen.append(("edit", interaction.user.name))
        await interaction.response.send_message(
            "Which agent?", view=Pick(self.seen), ephemeral=True
        )

    @discord.ui.button(label="Reject", style=discord.ButtonStyle.danger, custom_id=REJECT)
    async def reject(
        self, interaction: discord.Interaction, button: discord.ui.Button[Any]
    ) -> None:
        self.seen.append(("reject", interaction.user.name))
        await interaction.response.send_message("Only approvers can do that.", ephemeral=True)


async def test_connects_and_becomes_ready(fake: FakeDiscord) -> None:
    async with fake.running(make_bot([])) as bot:
        assert bot.user.id == int(fake.bot.id) and bot.application_id == int(fake.app_id)
        guild = bot.get_guild(int(fake.guild_id))
        assert guild is not None and {c.name for c in guild.text_channels} == {"general", "random"}
        assert guild.get_role(int(fake.role_id("approver"))) is not None
    assert [r.route for r in fake.log[:2]] == ["me", "application"]
    identify = fake.gateway.identifies[0]
    assert identify["token"] == fake.token and identify["intents"] == intents().value
    assert fake.gateway.heartbeats >= 1 and fake.gateway.connections[0][1]["v"] == "10"


async def test_a_mention_is_answered_in_a_thread_with_an_embed_a_file_and_an_edit(
    fake: FakeDiscord,
) -> None:
    bot = make_bot([])
    got: list[bytes] = []
    answers: list[tuple[str, str]] = []

    @bot.event
    async def on_message(message: discord.Message) -> None:
        assert bot.user is not None
        if isinstance(message.channel, discord.Thread) and not message.author.bot:
            answers.append((message.channel.name, message.content))
        if message.author.bot or not bot.user.mentioned_in(message):
            return
        got.append(await message.attachments[0].read())
        thread = await message.create_thread(name="Trip to Lisbon")
        card = discord.Embed(title="Proposal", description="3 agents, $1.20")
        status = await thread.send("Planning…", embed=card, allowed_mentions=NO_PINGS)
        await status.edit(content="Planned @everyone", allowed_mentions=NO_PINGS)
        await thread.send(
            file=discord.File(io.BytesIO(b"# Result\n"), "result.md"), allowed_mentions=NO_PINGS
        )

    async with fake.running(bot):
        asked = await fake.mention(
            "general", "alice", "plan a trip", attachments=[("brief.txt", b"two days")]
        )
        posted = await fake.wait_for("create_message", count=2)
        thread = fake.thread_of(asked)
        assert thread is not None
        await fake.reply_in_thread(thread, "alice", "BER, please")
        await fake.wait_until(lambda: bool(answers))
    assert got == [b"two days"] and answers == [("Trip to Lisbon", "BER, please")]
    assert thread["id"] == asked["id"] and thread["name"] == "Trip to Lisbon"
    first = fake.requests("create_message")[0]
    assert (
        first.params["channel_id"] == thread["id"]
        and first.json["embeds"][0]["title"] == "Proposal"
    )
    edit = fake.requests("edit_message")[0]
    assert (
        edit.json["content"] == "Planned @everyone" and edit.json["allowed_mentions"]["parse"] == []
    )
    assert posted.files[0].filename == "result.md" and posted.files[0].data == b"# Result\n"
    messages = fake.channel_messages(thread["id"])
    assert messages[0]["content"] == "Planned @everyone" and messages[0]["edited_timestamp"]
    assert fake.file_bytes(messages[1]["attachments"][0]) == b"# Result\n"
    assert fake.pinged() == [] and fake.unguarded_mentions() == []


async def test_persistent_buttons_select_and_modal_work_after_a_restart(fake: FakeDiscord) -> None:
    seen: list[Any] = []
    async with fake.running(make_bot(seen)) as bot:
        channel = general(bot, fake)
        card = await channel.send(embed=discord.Embed(title="Proposal"), view=Card(seen))
        approve = await fake.click(card.id, APPROVE, "bob", roles=["approver"])
        await fake.wait_for("edit_webhook_message")
    assert approve.callback_type == 6 and seen[0] == ("approve", "bob", ["@everyone", "approver"])
    assert fake.message(card.id)["content"] == "Approved by a reviewer."
    await fake.wait_until(lambda: fake.gateway.connected() == 0)

    # A new client (a restarted bot) answers the buttons of a message it never sent.
    async with fake.running(make_bot(seen)):
        reject = await fake.click(card.id, REJECT, "carol")
        assert (await fake.wait_ack(reject)).json["data"]["flags"] == 64
        edit = await fake.click(card.id, EDIT, "bob")
        await fake.wait_ack(edit)
        assert edit.original_id is not None and edit.ephemeral
        assert fake.message(edit.original_id)["flags"] & 64
        pick = await fake.select(edit.original_id, PICK, ["a1"], "bob")
        assert (await fake.wait_ack(pick)).json["type"] == 9
        submit = await fake.submit_modal("caramba:modal", {"prompt": "Cite sources."}, "bob")
        await fake.wait_ack(submit)
    assert seen[1:] == [
        ("reject", "carol"),
        ("edit", "bob"),
        ("picked", ["a1"]),
        ("submitted", "Cite sources.", "1.0"),
    ]
    assert all(
        i.ack_ms is not None and i.ack_ms < 3000 for i in (approve, reject, edit, pick, submit)
    )


async def test_a_slash_command_is_synced_deferred_and_followed_up_in_a_thread(
    fake: FakeDiscord,
) -> None:
    bot = make_bot([])

    @bot.tree.command(name="caramba", description="Give Caramba a task")
    @app_commands.describe(task="What to do")
    async def caramba(interaction: discord.Interaction, task: str) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send(f"Planning: {task}", wait=True, allowed_mentions=NO_PINGS)
        # Not the WebhookMessage followup.send returned: its .guild is None (discord.py).
        original = await interaction.original_response()
        await original.create_thread(name=task[:100])
        report = discord.File(io.BytesIO(b"a,b\n1,2\n"), "flights.csv")
        await interaction.followup.send("Only you see this.", file=report, ephemeral=True)

    async with fake.running(bot):
        synced = await bot.tree.sync()
        assert [c.name for c in synced] == ["caramba"]
        with pytest.raises(LookupError):
            await fake.slash("other", {}, "alice")
        inter = await fake.slash("caramba", {"task": "book a flight"}, "alice")
        await fake.wait_for("followup", count=2)
    command = fake.commands[None][0]
    assert (
        command["options"][0] | {"name": "task", "type": 3, "required": True}
        == command["options"][0]
    )
    assert inter.callback_type == 5 and inter.ack_ms is not None and inter.ack_ms < 3000
    assert inter.original_id is not None
    reply = fake.message(inter.original_id)
    assert reply["content"] == "Planning: book a flight" and not reply["flags"] & (64 | 128)
    assert (fake.thread_of(reply) or {}).get("name") == "book a flight"
    private = fake.message(inter.followup_ids[1])
    assert private["flags"] & 64 and fake.file_bytes(private["attachments"][0]) == b"a,b\n1,2\n"


async def test_discord_refusals_reach_the_client(fake: FakeDiscord) -> None:
    fake.interaction_deadline_s = 0.2
    bot = make_bot([])
    errors: list[discord.HTTPException] = []

    @bot.tree.command(
        name="slow", description="Answers too late", guild=discord.Object(int(fake.guild_id))
    )
    async def slow(interaction: discord.Interaction) -> None:
        await asyncio.sleep(0.3)
        try:
            await interaction.response.defer()
        except discord.HTTPException as exc:
            errors.append(exc)

    async with fake.running(bot):
        await bot.tree.sync(guild=discord.Object(int(fake.guild_id)))
        assert fake.commands[fake.guild_id][0]["name"] == "slow"
        await fake.slash("slow", None, "alice")
        channel = general(bot, fake)
        with pytest.raises(discord.HTTPException) as too_long:
            await channel.send("x" * 2001)
        await fake.wait_until(lambda: bool(errors))
    assert too_long.value.code == 50035 and "2000" in str(too_long.value)
    assert isinstance(errors[0], discord.NotFound) and errors[0].code == 10062


async def test_reactions_arrive_and_a_429_is_waited_out(fake: FakeDiscord) -> None:
    bot = make_bot([])
    reactions: list[tuple[str, int]] = []

    @bot.event
    async def on_raw_reaction_add(payload: discord.RawReactionActionEvent) -> None:
        reactions.append((str(payload.emoji), payload.user_id))

    async with fake.running(bot):
        channel = general(bot, fake)
        fake.rate_limit("create_message", retry_after=0.3)
        started = time.monotonic()
        result = await channel.send("Done.")
        waited = time.monotonic() - started
        await result.add_reaction("👍")
        await fake.react(result.id, "👎", "alice")
        await asyncio.sleep(0.1)
    statuses = [r.status for r in fake.requests("create_message")]
    assert statuses == [429, 200] and waited >= 0.3
    assert fake.requests("add_reaction")[0].params["emoji"] == "👍"
    assert reactions == [("👍", int(fake.bot.id)), ("👎", int(fake.person("alice").id))]


async def test_message_buckets_make_discord_py_wait_instead_of_overflowing() -> None:
    async with FakeDiscord.serving(message_limit=(2, 0.4)) as fake:
        async with fake.running(make_bot([])) as bot:
            status = await general(bot, fake).send("Planning…")
            started = time.monotonic()
            for step in range(3):
                await status.edit(content=f"Step {step}")
            waited = time.monotonic() - started
    assert [r.status for r in fake.requests("edit_message")] == [200, 200, 200]
    assert waited >= 0.3  # the third edit waited for the window to reset


async def test_intents_filter_content_and_a_dropped_gateway_resumes(fake: FakeDiscord) -> None:
    bot = make_bot([], content=False)
    heard: list[str] = []

    @bot.event
    async def on_message(message: discord.Message) -> None:
        heard.append(message.content)

    async with fake.running(bot):
        await fake.say("general", "alice", "not for the bot")
        await fake.disconnect()
        await fake.mention("general", "carol", "for the bot")  # missed, replayed on RESUME
        await fake.wait_until(lambda: len(heard) >= 2)
    assert heard == ["", f"<@{fake.bot.id}> for the bot"]
    assert fake.gateway.resumes and fake.gateway.connections[-1][0] == "/resume/"
