"""People deciding about a run from Discord: Approve / Edit / Reject on the card, the
agent picked and its form submitted, Cancel on the status message. Each is a click →
acknowledged within Discord's 3 s → the clicker as a ``Person`` → one call of the people
room (``core.runs.people``, where the rules are) → the card redrawn through an outbox
(``bots.chat.redraw``), or a refusal only the clicker sees (naming people, not ids)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec

import discord

from bots.chat.ports import Payload, Place, Rendered
from bots.discord.approvals import WHO, named, person
from bots.discord.card import decided_layout, edited_layout
from bots.discord.context import DiscordContext
from bots.discord.edit import EditModal, edit_from_form
from bots.discord.renderer import CARD_TEXT
from bots.discord.text import NO_PINGS, escape, truncate
from bots.discord.views import pick_view
from core.llm.models import configured_models
from core.runs import approval, people
from core.runs.approval import Approve, Decision, Reject
from core.runs.edits import Edit, EditProblem
from core.runs.outcomes import Refused
from core.types.agent import AgentSpec
from core.types.people import Person

log = logging.getLogger(__name__)
P = ParamSpec("P")
PICK = "Which agent do you want to change?"


def _reported(
    handler: Callable[Concatenate[Decisions, discord.Interaction, P], Awaitable[None]],
) -> Callable[Concatenate[Decisions, discord.Interaction, P], Awaitable[None]]:
    """A handler whose failure is logged and told to the clicker (not left as Discord's
    "This interaction failed")."""

    @functools.wraps(handler)
    async def guarded(
        self: Decisions, interaction: discord.Interaction, *args: P.args, **kwargs: P.kwargs
    ) -> None:
        try:
            await handler(self, interaction, *args, **kwargs)
        except Exception as exc:
            log.exception("handling a click on %s failed", handler.__name__)
            with contextlib.suppress(discord.HTTPException):
                await self._tell(interaction, f"❌ That did not work ({type(exc).__name__}).")

    return guarded


class Decisions:
    """The bot's :class:`bots.discord.views.Handlers` (and the edit form's)."""

    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    def _modal(self, run_id: str, card_id: int, agent: AgentSpec) -> EditModal:
        """The edit form of ``agent``, offering the configured models and the tools."""
        svc = self.ctx.svc
        return EditModal(run_id, card_id, agent, configured_models(svc.settings), svc.tools.names())

    def _person(self, interaction: discord.Interaction) -> Person:
        return person(self.ctx.svc.settings.discord, interaction.user)

    async def _redraw(
        self, interaction: discord.Interaction, run_id: str, card_id: int, payload: Payload
    ) -> None:
        """The card ``card_id`` (in the clicked message's channel) redrawn."""
        if not card_id or interaction.channel_id is None:
            return
        channel, card = str(interaction.channel_id), Rendered(CARD_TEXT, payload)
        redraw = self.ctx.redraws.redraw(
            run_id, Place(channel, channel), str(card_id), card, "card"
        )
        self.ctx.spawn(redraw)  # delivered (and retried) after the click is answered

    async def _tell(self, interaction: discord.Interaction, text: str) -> None:
        """A message only the clicker sees (``text`` already escaped)."""
        text = truncate(text, 2000)
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)

    # -- Approve / Reject ----------------------------------------------------------------

    @_reported
    async def approve(self, interaction: discord.Interaction, run_id: str) -> None:
        await self._decide(interaction, run_id, Approve())

    @_reported
    async def reject(self, interaction: discord.Interaction, run_id: str) -> None:
        await self._decide(interaction, run_id, Reject())

    async def _decide(
        self, interaction: discord.Interaction, run_id: str, decision: Decision
    ) -> None:
        """A click → ``people.decide`` → the card without its buttons, saying who
        decided; or a refusal."""
        await interaction.response.defer()
        svc = self.ctx.svc
        outcome = await people.decide(svc, run_id, self._person(interaction), decision, who=WHO)
        if isinstance(outcome, Refused):
            await self._tell(interaction, await named(self.ctx.links, outcome.reason))
            return
        card = approval.view(svc.settings, outcome.run, svc.tools)
        note = f"**{outcome.said.render(escape, escape(outcome.said.name))}**"
        payload = {"layout": decided_layout(card, note), "buttons": "none", "run": run_id}
        card_id = interaction.message.id if interaction.message else 0
        await self._redraw(interaction, run_id, card_id, payload)

    # -- Cancel --------------------------------------------------------------------------

    @_reported
    async def cancel(self, interaction: discord.Interaction, run_id: str) -> None:
        """Cancel → ``people.cancel`` (the same people as for approving); the run's
        progress then shows it cancelled, by whom."""
        await interaction.response.defer()
        outcome = await people.cancel(self.ctx.svc, run_id, self._person(interaction), who=WHO)
        if isinstance(outcome, Refused):
            await self._tell(interaction, await named(self.ctx.links, outcome.reason))

    # -- Edit: pick an agent, fill its form ----------------------------------------------

    async def _editable(
        self, interaction: discord.Interaction, run_id: str
    ) -> list[AgentSpec] | None:
        """The proposal's agents if the clicker may edit it; else None, refused."""
        opened = await people.editable(self.ctx.svc, run_id, self._person(interaction), who=WHO)
        if isinstance(opened, Refused):
            await self._tell(interaction, await named(self.ctx.links, opened.reason))
            return None
        return list(opened.agents)

    @_reported
    async def edit(self, interaction: discord.Interaction, run_id: str) -> None:
        """Edit → the form at once for a single agent, else a select of the agents."""
        agents = await self._editable(interaction, run_id)
        if agents is None:
            return
        card_id = interaction.message.id if interaction.message else 0
        if len(agents) == 1:
            await interaction.response.send_modal(self._modal(run_id, card_id, agents[0]))
            return
        view = pick_view(run_id, card_id, [(a.id, a.name) for a in agents])
        await interaction.response.send_message(
            PICK, view=view, ephemeral=True, allowed_mentions=NO_PINGS
        )

    @_reported
    async def pick(
        self, interaction: discord.Interaction, run_id: str, card_id: int, agent_id: str
    ) -> None:
        agents = await self._editable(interaction, run_id)
        if agents is None:
            return
        agent = next((a for a in agents if a.id == agent_id), None)
        if agent is None:
            await self._tell(interaction, "That agent is no longer in the proposal.")
            return
        await interaction.response.send_modal(self._modal(run_id, card_id, agent))

    @_reported
    async def submit_edit(
        self,
        interaction: discord.Interaction,
        run_id: str,
        card_id: int,
        agent: AgentSpec,
        values: dict[str, str],
    ) -> None:
        """The form → ``decide`` with an ``Edit`` (core validates it) → the card shows the
        edited proposal; or the problems, each with its field, to the submitter."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        svc = self.ctx.svc
        change = edit_from_form(agent, values)
        if isinstance(change, list):
            await self._tell(interaction, _problems(change))
            return
        if not change.model_dump(exclude={"agent_id"}, exclude_defaults=True):
            await self._tell(interaction, "Nothing changed.")
            return
        edit = Edit(agents=(change,))
        outcome = await people.decide(svc, run_id, self._person(interaction), edit, who=WHO)
        if isinstance(outcome, Refused):
            text = (
                _problems(list(outcome.problems))
                if outcome.problems
                else await named(self.ctx.links, outcome.reason)
            )
            await self._tell(interaction, text)
            return
        card = approval.view(svc.settings, outcome.run, svc.tools)
        layout = edited_layout(card, interaction.user.display_name)
        payload = {"layout": layout, "buttons": "card", "run": run_id}
        await self._tell(interaction, f"Saved: {escape(agent.name)} changed; approve to start.")
        await self._redraw(interaction, run_id, card_id, payload)


def _problems(problems: list[EditProblem]) -> str:
    lines = "\n".join(f"• {escape(str(p))}" for p in problems)
    return f"Not changed:\n{lines}"
