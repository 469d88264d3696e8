"""Schedules in Slack: ``/caramba schedule …`` (the command's words into the shared
schedule command, ``bots.chat.schedule_command``: one call of ``core.runs.schedules``,
the answer shown only to the person who typed it, through the command's
``response_url``), and the "Run this every…" button under a completed run's result,
whose modal asks when, the budget per run and the time zone and makes a schedule of
that run's cohort (``core.runs.schedules.schedule(from_run=…)``)."""

from __future__ import annotations

import json
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.models.blocks import ActionsBlock, ButtonElement, InputBlock, PlainTextInputElement
from slack_sdk.models.views import View

from bots.chat.schedule_command import answer, typed_budget
from bots.slack.context import SlackContext
from bots.slack.mentions import People
from bots.slack.text import escape, truncate
from core.config_schedules import ScheduleSettings
from core.runs import schedules as people
from core.runs.outcomes import Refused
from core.services import Services
from core.types.place import Place
from core.types.schedules import NotUnderstood


def place_of(command: dict[str, Any]) -> Place:
    """Where a slash command was typed, as core names a place."""
    name = command.get("channel_name", "")
    return Place(
        platform="slack",
        workspace=command.get("team_id", ""),
        channel=command["channel_id"],
        workspace_name=command.get("team_domain", ""),
        channel_name=f"#{name}" if name and not name.startswith("#") else name,
    )


async def handle_schedule(
    svc: Services, people: People, command: dict[str, Any], respond: AsyncRespond
) -> None:
    """Answer ``/caramba schedule …`` to the person who typed it."""
    user = command.get("user_id", "")
    person = await people.person(user)
    said = await answer(svc, person, place_of(command), command.get("text", ""))
    await respond(text=truncate(escape(said)), response_type="ephemeral")


# -- "Run this every…" under a finished run's result, and its modal ----------------------

REPEAT = "caramba_schedule_repeat"
REPEAT_VIEW = "caramba_schedule_view"


def repeat_block(run_id: str) -> dict[str, Any]:
    """The "Run this every…" button under a completed run's result (the run id as value)."""
    return ActionsBlock(
        block_id=f"repeat:{run_id}",
        elements=[ButtonElement(text="Run this every…", action_id=REPEAT, value=run_id)],
    ).to_dict()


def repeat_form(meta: dict[str, str], settings: ScheduleSettings) -> View:
    """The modal asking when, the budget per run and the time zone."""

    def field(block: str, label: str, hint: str, optional: bool, initial: str = "") -> InputBlock:
        element = PlainTextInputElement(
            action_id="text", placeholder=hint, max_length=200, initial_value=initial or None
        )
        return InputBlock(block_id=block, label=label, optional=optional, element=element)

    return View(
        type="modal",
        callback_id=REPEAT_VIEW,
        title="Run this every…",
        submit="Schedule",
        close="Back",
        private_metadata=json.dumps(meta),
        blocks=[
            field("when", "When", "every weekday at 9:00, or 0 9 * * 1-5", False),
            field("budget", "Budget per run (USD)", f"{settings.default_budget_usd:g}", True),
            field("tz", "Time zone", settings.default_tz, True),
        ],
    )


def _typed(view: dict[str, Any], block: str) -> str:
    value = view["state"]["values"].get(block, {}).get("text", {}).get("value")
    return str(value or "").strip()


def add_schedule_listeners(ctx: SlackContext) -> None:
    """The "Run this every…" button opens the modal; its answer makes the schedule."""

    async def on_repeat(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # Slack's trigger_id is valid for 3 s: the form opens at once
        team = body.get("team") or {}
        channel = body.get("channel") or {}
        meta = {
            "run": str(body["actions"][0].get("value") or ""),
            "team": str(team.get("id", "")),
            "team_name": str(team.get("domain", "")),
            "channel": str(channel.get("id", "")),
            "channel_name": str(channel.get("name", "")),
        }
        form = repeat_form(meta, ctx.svc.settings.schedules)
        await ctx.client.views_open(trigger_id=body["trigger_id"], view=form)

    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        meta = json.loads(view["private_metadata"])
        budget_text = _typed(view, "budget")
        budget = typed_budget(budget_text)
        if isinstance(budget, str):
            await ack(response_action="errors", errors={"budget": budget[:150]})
            return
        user = body["user"]["id"]
        person = await ctx.people.person(user, wait_s=1.0)
        name = meta.get("channel_name", "")
        place = Place(
            platform="slack",
            workspace=meta["team"],
            channel=meta["channel"],
            workspace_name=meta.get("team_name", ""),
            channel_name=f"#{name}" if name and not name.startswith("#") else name,
        )
        made = await people.schedule(
            ctx.svc, person, place, from_run=meta["run"], when=_typed(view, "when"),
            tz=_typed(view, "tz") or None, budget_usd=budget,
        )  # fmt: skip
        if isinstance(made, NotUnderstood):
            await ack(response_action="errors", errors={"when": made.hint[:150]})
            return
        if isinstance(made, Refused):
            block = "budget" if "budget" in made.reason or "$" in made.reason else "when"
            await ack(response_action="errors", errors={block: made.reason[:150]})
            return
        await ack()
        text = truncate(escape(f"{made.line} (id {made.schedule.id})"))
        ctx.spawn(_tell(ctx, meta["channel"], user, text))

    ctx.app.action(REPEAT)(on_repeat)
    ctx.app.view(REPEAT_VIEW)(on_submit)


async def _tell(ctx: SlackContext, channel: str, user: str, text: str) -> None:
    await ctx.client.chat_postEphemeral(channel=channel, user=user, text=text)
