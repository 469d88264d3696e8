"""👍 / 👎 on a run's result: one vote per person and run, counted for the run's cohort in
the library (``core.runs.learning.rate``), answered privately."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck

from bots.slack.blocks import FEEDBACK_DOWN, FEEDBACK_UP
from bots.slack.context import SlackContext
from core.runs import learning
from core.services import Services

log = logging.getLogger(__name__)
# How long a vote is remembered (a later click after that counts again).
VOTE_TTL_S = 90 * 24 * 3600
THANKS = "Thanks for rating this run: it helps pick the teams for the next tasks."
ALREADY = "You already rated this run."
FAILED = "Sorry, your rating could not be recorded; please try again."


def vote_key(svc: Services, run_id: str, user: str) -> str:
    return f"{svc.settings.redis.key_prefix}:slack:feedback:{run_id}:{user}"


async def record_vote(ctx: SlackContext, body: dict[str, Any], *, thumbs_up: bool) -> None:
    """Count ``user``'s first vote on the run (a double click or a change of mind counts
    once) and tell them privately."""
    svc = ctx.svc
    user, run_id = body["user"]["id"], body["actions"][0]["value"]
    channel, message = body["channel"]["id"], body["message"]
    key = vote_key(svc, run_id, user)
    text = THANKS
    if not await svc.redis.set(key, "up" if thumbs_up else "down", nx=True, ex=VOTE_TTL_S):
        text = ALREADY
    else:
        try:
            await learning.rate(svc, await svc.store.get_run(run_id), thumbs_up=thumbs_up)
        except Exception:
            log.exception("recording feedback on %s failed", run_id)
            await svc.redis.delete(key)  # it did not count: the person may try again
            text = FAILED
    await ctx.client.chat_postEphemeral(
        channel=channel,
        user=user,
        thread_ts=message.get("thread_ts") or message["ts"],
        text=text,
    )


def add_feedback_listeners(ctx: SlackContext) -> None:
    """Listen to the rating buttons under a run's result (``blocks.result_blocks``)."""

    async def on_vote(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        up = body["actions"][0]["action_id"] == FEEDBACK_UP
        ctx.spawn(record_vote(ctx, body, thumbs_up=up))

    ctx.app.action(FEEDBACK_UP)(on_vote)
    ctx.app.action(FEEDBACK_DOWN)(on_vote)
