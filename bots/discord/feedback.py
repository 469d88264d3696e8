"""👍 / 👎 under a run's result → ``core.runs.people.rate``: one vote per person and
run, counted for the run's cohort and agents in the library."""

from __future__ import annotations

import logging

import discord

from bots.discord.context import DiscordContext
from core.runs import people
from core.types.people import Person

log = logging.getLogger(__name__)
VOTES = {"👍": True, "👎": False}


class Feedback:
    def __init__(self, ctx: DiscordContext) -> None:
        self.ctx = ctx

    async def on_reaction(self, payload: discord.RawReactionActionEvent) -> None:
        """A reaction added anywhere: counted if it is a vote on a run's result by a
        person (or an allowed bot), once."""
        me = self.ctx.client.user
        up = VOTES.get(str(payload.emoji))
        if up is None or me is None or payload.user_id == me.id:
            return
        member = payload.member
        allowed = self.ctx.svc.settings.discord.allow_bots
        if member is not None and member.bot and str(member.id) not in allowed:
            return
        run_id = await self.ctx.links.result_of(payload.message_id)
        if run_id is None:
            return
        name = member.display_name if member is not None else "someone"
        self.ctx.spawn(self.vote(run_id, Person(str(payload.user_id), name), up))

    async def vote(self, run_id: str, voter: Person, up: bool) -> None:
        """The person's first vote on the run counts (a change of mind does not)."""
        outcome = await people.rate(self.ctx.svc, run_id, voter, up=up)
        log.debug("%s's vote on %s: %s", voter.id, run_id, type(outcome).__name__)
