"""👍 / 👎 under a run's result: one vote per person and run, counted for the run's
cohort and agents in the library (``core.runs.learning.rate``)."""

from __future__ import annotations

import logging

import discord

from bots.discord.context import DiscordContext
from core.runs import learning

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
        self.ctx.spawn(self.vote(run_id, payload.user_id, up))

    async def vote(self, run_id: str, user_id: int, up: bool) -> None:
        """The person's first vote on the run counts (a change of mind does not)."""
        links, svc = self.ctx.links, self.ctx.svc
        if not await links.vote(run_id, user_id, up):
            return
        try:
            await learning.rate(svc, await svc.store.get_run(run_id), thumbs_up=up)
        except Exception:
            log.exception("recording feedback on %s failed", run_id)
            await links.unvote(run_id, user_id)  # it did not count: the person may try again
