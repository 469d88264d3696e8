"""``/caramba <task>``: the same flow as a mention, started from Slack's slash command.

Slack wants the command acknowledged within 3 s, so the listener only acks and hands the
work over. A slash command has no message to thread under, so the bot posts one saying
who asked and what, and the run lives in that message's thread exactly as a mention's
does (``SlackBot.take_request``). What only the person should see (the help for an empty
command, a channel the bot cannot post in) goes back through the command's
``response_url``, which works where the bot is not a member.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.errors import SlackApiError

from bots.chat.schedule_command import is_schedule
from bots.slack.budget_command import handle_budget, is_budget
from bots.slack.context import SlackContext
from bots.slack.mentions import People, task_text
from bots.slack.schedules import handle_schedule
from bots.slack.spend import SlackPlaces
from bots.slack.text import escape, truncate

log = logging.getLogger(__name__)
COMMAND = "/caramba"
HELP = (
    "Give me a task, e.g. “/caramba compare the three cheapest flights to Berlin”, or "
    "schedule one: “/caramba schedule add every weekday at 9:00 | summarise the tickets | $2”."
)
# What chat.postMessage answers for a channel the bot is not in (private ones are
# "channel_not_found" to it).
_NOT_IN = {"not_in_channel", "channel_not_found"}
INVITE = (
    "I am not in this channel, so I cannot start a thread here: invite me with "
    "`/invite @caramba` and try again."
)


class TakesRequest(Protocol):
    """``SlackBot.take_request``: record the task and follow its run in ``thread``."""

    async def __call__(self, *, channel: str, thread: str, task: str, user: str) -> None: ...


class SlashCommand:
    """The ``/caramba`` listener, added to ``ctx.app``."""

    def __init__(
        self,
        ctx: SlackContext,
        people: People,
        take: TakesRequest,
        places: SlackPlaces | None = None,
    ) -> None:
        self.ctx, self.people, self.take = ctx, people, take
        # The bot's own (names learned here serve its mentions too: bots.slack.spend).
        self.places = places or SlackPlaces(ctx.client, ctx.svc)
        ctx.app.command(COMMAND)(self._on_command)

    async def _on_command(
        self,
        ack: AsyncAck,
        command: dict[str, Any],
        context: dict[str, Any],
        respond: AsyncRespond,
    ) -> None:
        if not command.get("text", "").strip():
            await ack(text=HELP)  # Slack shows the ack's text to the person only
            return
        await ack()
        if is_schedule(command.get("text", "")):  # /caramba schedule …: bots.slack.schedules
            self.ctx.spawn(handle_schedule(self.ctx.svc, self.people, command, respond))
            return
        if is_budget(command.get("text", "")):  # /caramba budget …: bots.slack.budget_command
            budget = handle_budget(self.ctx.svc, self.people, self.places, command, respond)
            self.ctx.spawn(budget)
            return
        self.ctx.spawn(self.handle(command, context.get("bot_user_id"), respond))

    async def handle(
        self, command: dict[str, Any], bot_user_id: str | None, respond: AsyncRespond
    ) -> None:
        """Post who asked and what in the channel, then take the request in its thread."""
        channel, user = command["channel_id"], command.get("user_id", "")
        task = await task_text(command.get("text", ""), bot_user_id, self.people)
        if not task:  # only the bot's own mention
            await respond(text=HELP, response_type="ephemeral")
            return
        name = await self.people.name(user, command.get("user_name", ""))
        text = truncate(f"{escape(name)} asked: {escape(task)}")
        try:
            posted = await self.ctx.client.chat_postMessage(channel=channel, text=text)
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            log.info("could not post /caramba's message in %s: %s", channel, error)
            hint = INVITE if error in _NOT_IN else f":x: I could not post here ({error})."
            await respond(text=hint, response_type="ephemeral")
            return
        except Exception as exc:  # Slack out of reach: say so rather than stay silent
            log.exception("could not post /caramba's message in %s", channel)
            hint = f":x: I could not post here ({type(exc).__name__}); try again in a minute."
            await respond(text=hint, response_type="ephemeral")
            return
        await self.places.learn(command)  # the channel's name, for the spend ledger
        await self.take(channel=channel, thread=posted["ts"], task=task, user=user)
