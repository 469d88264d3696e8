"""👍 / 👎 on a run's result (Slack's ``feedback_buttons`` element, ``blocks.feedback_block``)
→ ``core.runs.people.rate`` (one vote per person and run, counted for the run's cohort
in the library), answered privately. The custom buttons results had before
(``FEEDBACK_UP`` / ``FEEDBACK_DOWN``, the run id as value) are still answered."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck

from bots.slack.blocks import FEEDBACK, FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.context import SlackContext
from core.runs import people
from core.runs.outcomes import AlreadyRated, Rated

# What the clicker is told (core's words).
THANKS, ALREADY = Rated().line, AlreadyRated().line


def vote_of(action: dict[str, Any]) -> tuple[str, bool] | None:
    """The run and whether the vote is 👍, from a clicked action (None: not a vote)."""
    action_id, value = action.get("action_id"), str(action.get("value") or "")
    if action_id == FEEDBACK:
        vote, _, run_id = value.partition(":")
        if vote in (FEEDBACK_UP, FEEDBACK_DOWN) and run_id:
            return run_id, vote == FEEDBACK_UP
        return None
    if action_id in (FEEDBACK_UP, FEEDBACK_DOWN) and value:
        return value, action_id == FEEDBACK_UP
    return None


async def record_vote(ctx: SlackContext, body: dict[str, Any]) -> None:
    """The clicker's vote (their first on the run counts) and what became of it, told
    only to them."""
    vote = vote_of(body["actions"][0])
    if vote is None:
        return
    (run_id, up), user = vote, body["user"]["id"]
    channel, message = body["channel"]["id"], body["message"]
    outcome = await people.rate(ctx.svc, run_id, ctx.people.known(user), up=up)
    await ctx.client.chat_postEphemeral(
        channel=channel,
        user=user,
        thread_ts=message.get("thread_ts") or message["ts"],
        text=outcome.line,
    )


def add_feedback_listeners(ctx: SlackContext) -> None:
    """Listen to the feedback buttons under a run's result."""

    async def on_vote(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        ctx.spawn(record_vote(ctx, body))

    for action_id in (FEEDBACK, FEEDBACK_UP, FEEDBACK_DOWN):
        ctx.app.action(action_id)(on_vote)
