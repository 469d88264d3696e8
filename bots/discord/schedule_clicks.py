"""What schedules' clicks and forms do in Discord: Pause / Resume / Delete on a list (the
list redrawn, the change said to the clicker alone), Edit on a list (a form with when,
time zone and budget, for the schedule's owner or an approver), and "Run this every…"
under a finished run's result (the same form, making a new schedule from that run). The
components themselves are ``bots.discord.schedule_items``; every change is one call of
``core.runs.schedules``, which guards the owner rule again."""

from __future__ import annotations

import discord

from bots.chat.schedule_command import typed_budget
from bots.discord.schedule_handling import NEEDS_WHEN, ScheduleHandling, act, reported, said
from bots.discord.schedule_items import Action, EditScheduleModal, EveryModal
from bots.discord.schedule_list import list_view
from bots.discord.text import NO_PINGS, escape
from core.runs import schedules as plans
from core.runs.outcomes import Refused
from core.types.schedules import Changed


class ScheduleClicks(ScheduleHandling):
    """The handlers of schedules' buttons and forms (``bots.discord.schedule_items.Handlers``)."""

    # -- the list's buttons --------------------------------------------------------------

    @reported
    async def change(
        self, interaction: discord.Interaction, schedule_id: str, action: Action
    ) -> None:
        """Pause / Resume / Delete on a list: the list redrawn as it is now and the
        change said to the clicker alone, or why not."""
        await interaction.response.defer()
        outcome = await act(action)(self.ctx.svc, schedule_id, self._person(interaction))
        if isinstance(outcome, Changed):
            place = self._place(interaction)
            listed = await plans.listed(self.ctx.svc, place)
            view = list_view(listed.schedules, place.channel)
            await interaction.edit_original_response(view=view, allowed_mentions=NO_PINGS)
        await self._tell(interaction, said(outcome))

    @reported
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

    @reported
    async def submit_edit(
        self, interaction: discord.Interaction, schedule_id: str, values: dict[str, str]
    ) -> None:
        """The edit form sent: what differs is changed (core guards the owner rule again)."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        budget = typed_budget(values.get("budget", ""))
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

    @reported
    async def every(self, interaction: discord.Interaction, run_id: str) -> None:
        """The form (a modal answers the click: no defer before it)."""
        s = self._settings
        await interaction.response.send_modal(
            EveryModal(run_id, s.default_tz, f"{s.default_budget_usd:g}")
        )

    @reported
    async def submit_every(
        self, interaction: discord.Interaction, run_id: str, values: dict[str, str]
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        when = values.get("when", "")
        budget = typed_budget(values.get("budget", ""))
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
