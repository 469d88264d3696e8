"""👍 / 👎 on a run's result → ``core.runs.people.rate`` (one vote per person and run,
counted for the run's cohort in the library), answered privately."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck

from bots.slack.blocks import FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.context import SlackContext
from core.runs import people
from core.runs.outcomes import AlreadyRated, Rated

# What the clicker is told (core's words).
THANKS, ALREADY = Rated().line, AlreadyRated().line


async def record_vote(ctx: SlackContext, body: dict[str, Any], *, thumbs_up: bool) -> None:
    """The clicker's vote (their first on the run counts) and what became of it, told
    only to them."""
    user, run_id = body["user"]["id"], body["actions"][0]["value"]
    channel, message = body["channel"]["id"], body["message"]
    outcome = await people.rate(ctx.svc, run_id, ctx.people.known(user), up=thumbs_up)
    await ctx.client.chat_postEphemeral(
        channel=channel,
        user=user,
        thread_ts=message.get("thread_ts") or message["ts"],
        text=outcome.line,
    )


def add_feedback_listeners(ctx: SlackContext) -> None:
    """Listen to the rating buttons under a run's result (``blocks.result_blocks``)."""

    async def on_vote(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        up = body["actions"][0]["action_id"] == FEEDBACK_UP
        ctx.spawn(record_vote(ctx, body, thumbs_up=up))

    ctx.app.action(FEEDBACK_UP)(on_vote)
    ctx.app.action(FEEDBACK_DOWN)(on_vote)
