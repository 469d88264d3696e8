"""The Discord bot: a discord.py gateway client whose listeners validate, acknowledge and
hand the work over (``front``: requests and replies; ``decisions``: the card's buttons,
the edit form, Cancel; ``feedback``: 👍/👎), and whose runs are shown by the shared chat
layer's relays (``bots.chat.relays``: leases, the durable outbox, resume after a
restart) with the Discord renderer and transport.

Intents: guilds (threads, roles), guild messages (mentions, replies in a run's thread),
guild message reactions (votes on results), and Message Content when
``discord.message_content`` (replies that do not mention the bot). Nothing the bot sends
pings anyone (``allowed_mentions`` none, on the client and on every call)."""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

import discord
from discord import app_commands

from bots.chat.background import Background
from bots.chat.ports import Adapter, Limits
from bots.chat.relays import Relays
from bots.chat.schedule_command import is_schedule
from bots.chat.store import ChatStore
from bots.chat.threads import Threads
from bots.discord.budget import BUDGET_ITEMS, BudgetDecisions
from bots.discord.claims import ClaimingTree
from bots.discord.context import DiscordContext
from bots.discord.decisions import Decisions
from bots.discord.feedback import Feedback
from bots.discord.firings import DiscordFirings
from bots.discord.form_clicks import FormClicks
from bots.discord.forms import FORM_ITEMS
from bots.discord.front import Front
from bots.discord.links import Links
from bots.discord.renderer import DiscordRenderer
from bots.discord.replies import REPLY_ITEMS, Replies
from bots.discord.schedule_items import SCHEDULE_ITEMS
from bots.discord.schedules import Schedules, add_schedule_command
from bots.discord.spend import SPEND_ITEMS, SpendDecisions, add_budget_command, budget_words
from bots.discord.text import MESSAGE_LIMIT, NO_PINGS
from bots.discord.tool_approvals import TOOL_ITEMS, ToolApprovals
from bots.discord.transport import DiscordTransport
from bots.discord.views import DYNAMIC_ITEMS
from core.services import Services

log = logging.getLogger(__name__)
COMMAND = "caramba"


def intents(message_content: bool) -> discord.Intents:
    wanted = discord.Intents.none()
    wanted.guilds = wanted.guild_messages = wanted.guild_reactions = True
    wanted.message_content = message_content
    return wanted


class CarambaBot(discord.Client):
    """One Discord application's bot over ``svc``. ``sync``: sync the slash command when
    it starts (``discord.sync_commands``, or ``caramba discord --sync``)."""

    def __init__(self, svc: Services, *, sync: bool = False, **options: Any) -> None:
        settings = svc.settings.discord
        super().__init__(
            intents=intents(settings.message_content), allowed_mentions=NO_PINGS, **options
        )
        self.svc = svc
        self.sync = sync or settings.sync_commands
        self.tree = ClaimingTree(self)
        self.background = Background("discord")
        store = ChatStore.of(svc, "discord")
        self.links = Links(store)
        self.adapter = Adapter(
            "discord",
            "Discord",
            DiscordRenderer(),
            DiscordTransport(self, svc.workspace, self.links),
            Limits.of(settings, message_chars=MESSAGE_LIMIT),
        )
        self.threads = Threads(store)
        self.relays = Relays(svc, self.adapter, self.threads)
        self.ctx = DiscordContext(
            client=self,
            svc=svc,
            links=self.links,
            relays=self.relays,
            run_in=self._run_in,
            spawn=self.spawn,
            redraws=self.relays.redraws,
        )
        # The persistent components' handlers (bots.discord.views.handlers finds them).
        self.handlers = Decisions(self.ctx)
        self.budget = BudgetDecisions(self.ctx)
        self.forms = FormClicks(self.ctx)
        self.tool_approvals = ToolApprovals(self.ctx)
        self.front = Front(self.ctx)
        self.feedback = Feedback(self.ctx)
        self.replies = Replies(self.ctx)
        self.spend = SpendDecisions(self.ctx)
        self.schedules = Schedules(self.ctx)
        self._add_command()
        add_schedule_command(self.tree, self.schedules)
        add_budget_command(self.tree, self.spend)
        self.firings = DiscordFirings(self, self.relays)

    def _add_command(self) -> None:
        @app_commands.command(name=COMMAND, description="Give Caramba a task")
        @app_commands.describe(task="What the agents should do")
        async def caramba(interaction: discord.Interaction, task: str) -> None:
            if is_schedule(task):  # "/caramba task:schedule add … | …", as Slack's
                await self.schedules.typed(interaction, task)
                return
            if (budget := budget_words(task)) is not None:  # "/caramba task:budget $50"
                await self.spend.budget(interaction, budget.usd, budget.scope, budget.owner)
                return
            await self.front.slash(interaction, task)

        self.tree.add_command(caramba)

    async def _run_in(self, thread: discord.Thread) -> str | None:
        return await self.threads.run_in(str(thread.parent_id), str(thread.id))

    # -- background work ---------------------------------------------------------------

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after the listener returned; errors are logged, never lost."""
        self.background.spawn(work)

    async def drain(self) -> None:
        """Wait for the listeners' work (not for the relays: they last as long as runs)."""
        await self.background.drain()

    # -- life ----------------------------------------------------------------------------

    async def setup_hook(self) -> None:
        """Before the gateway connects: the persistent components (cards posted before a
        restart keep working), the slash command, the runs earlier processes left."""
        self.add_dynamic_items(
            *DYNAMIC_ITEMS,
            *BUDGET_ITEMS,
            *FORM_ITEMS,
            *TOOL_ITEMS,
            *REPLY_ITEMS,
            *SCHEDULE_ITEMS,
            *SPEND_ITEMS,
        )
        if self.sync:
            await self.sync_commands()
        resumed = await self.relays.start()
        self.firings.start()  # schedules' firings in their channels
        log.info("the Discord bot starts; %d runs taken up", resumed)

    async def sync_commands(self) -> list[app_commands.AppCommand]:
        """Publish ``/caramba``: to ``discord.command_guild`` (at once) or globally."""
        guild_id = self.svc.settings.discord.command_guild
        if guild_id:
            guild = discord.Object(int(guild_id))
            self.tree.copy_global_to(guild=guild)
            return await self.tree.sync(guild=guild)
        return await self.tree.sync()

    async def close(self) -> None:
        """Finish the listeners' work, stop the relays (they give their runs up), then
        disconnect."""
        await self.ctx.redraws.aclose()
        await self.firings.aclose()
        await self.drain()
        await self.relays.aclose()
        await super().close()

    # -- gateway events ------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        await self.front.on_message(message)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self.feedback.on_reaction(payload)
