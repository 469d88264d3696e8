"""People deciding about a run from Discord: Approve / Edit / Reject on the card, the
agent picked and its form submitted, Cancel on the status message. Each is a click →
acknowledged within Discord's 3 s → one core call → the card updated, or a refusal only
the clicker sees (naming people, not ids)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec

import discord

from bots.discord.approvals import is_approver, mark, named
from bots.discord.card import decided_embed, proposal_embed
from bots.discord.context import DiscordContext
from bots.discord.edit import EditModal, edit_from_form
from bots.discord.text import NO_PINGS, escape, truncate
from bots.discord.views import card_view, pick_view
from core.runs import approval
from core.runs.approval import Approve, Decision, Reject, decide, may_decide
from core.runs.control import cancel_run
from core.runs.edits import Edit, EditProblem, agents_of
from core.types.agent import AgentSpec

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

    def _approver(self, interaction: discord.Interaction) -> bool:
        return is_approver(self.ctx.svc.settings.discord, interaction.user)

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
        """A click → ``core.runs.approval.decide`` → the card without its buttons, saying
        who decided; or a refusal."""
        await interaction.response.defer()
        svc, user = self.ctx.svc, str(interaction.user.id)
        outcome = await decide(
            svc, run_id, user, decision, who=mark, approver=self._approver(interaction)
        )
        if not outcome.ok:
            await self._tell(interaction, await named(self.ctx.links, outcome.message))
            return
        verb = "Approved" if isinstance(decision, Approve) else "Rejected"
        card = approval.view(svc.settings, outcome.run, svc.tools)
        note = f"**{verb} by {escape(interaction.user.display_name)}.**"
        await interaction.edit_original_response(
            embed=decided_embed(card, note), view=None, allowed_mentions=NO_PINGS
        )

    # -- Cancel --------------------------------------------------------------------------

    @_reported
    async def cancel(self, interaction: discord.Interaction, run_id: str) -> None:
        """Cancel → ``core.runs.control.cancel_run`` (the same people as for approving);
        the run's progress then shows it cancelled."""
        await interaction.response.defer()
        svc, user = self.ctx.svc, str(interaction.user.id)
        run = await svc.store.get_run(run_id)
        reason = may_decide(svc.settings, run, user, mark, approver=self._approver(interaction))
        if reason is None:
            step = await cancel_run(svc, run_id, user)
            reason = None if step.ok else f"Not cancelled: {step.reason}."
        if reason is not None:
            await self._tell(interaction, await named(self.ctx.links, reason))

    # -- Edit: pick an agent, fill its form ----------------------------------------------

    async def _editable(
        self, interaction: discord.Interaction, run_id: str
    ) -> list[AgentSpec] | None:
        """The proposal's agents if the clicker may edit it; else None, refused."""
        svc = self.ctx.svc
        run = await svc.store.get_run(run_id)
        refusal = may_decide(
            svc.settings, run, str(interaction.user.id), mark, approver=self._approver(interaction)
        )
        if refusal is not None:
            await self._tell(interaction, await named(self.ctx.links, refusal))
            return None
        return agents_of(run)

    @_reported
    async def edit(self, interaction: discord.Interaction, run_id: str) -> None:
        """Edit → the form at once for a single agent, else a select of the agents."""
        agents = await self._editable(interaction, run_id)
        if agents is None:
            return
        card_id = interaction.message.id if interaction.message else 0
        if len(agents) == 1:
            await interaction.response.send_modal(EditModal(run_id, card_id, agents[0]))
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
        await interaction.response.send_modal(EditModal(run_id, card_id, agent))

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
        svc, user = self.ctx.svc, str(interaction.user.id)
        change = edit_from_form(agent, values)
        if isinstance(change, list):
            await self._tell(interaction, _problems(change))
            return
        if not change.model_dump(exclude={"agent_id"}, exclude_defaults=True):
            await self._tell(interaction, "Nothing changed.")
            return
        outcome = await decide(
            svc,
            run_id,
            user,
            Edit(agents=(change,)),
            who=mark,
            approver=self._approver(interaction),
        )
        if not outcome.ok:
            text = (
                _problems(list(outcome.problems))
                if outcome.problems
                else await named(self.ctx.links, outcome.message)
            )
            await self._tell(interaction, text)
            return
        card = approval.view(svc.settings, outcome.run, svc.tools)
        embed = proposal_embed(card)
        embed.set_footer(
            text=f"{embed.footer.text} · edited by {interaction.user.display_name}"[:2048]
        )
        if card_id and interaction.channel_id is not None:
            channel = self.ctx.client.get_partial_messageable(interaction.channel_id)
            try:
                message = channel.get_partial_message(card_id)
                await message.edit(embed=embed, view=card_view(run_id), allowed_mentions=NO_PINGS)
            except discord.HTTPException:
                log.exception("could not update the card of %s", run_id)
        await self._tell(interaction, f"Saved: {escape(agent.name)} changed; approve to start.")


def _problems(problems: list[EditProblem]) -> str:
    lines = "\n".join(f"• {escape(str(p))}" for p in problems)
    return f"Not changed:\n{lines}"
