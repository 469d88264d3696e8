"""``/caramba schedule …`` in Slack: the command's words into the shared schedule
command (``bots.chat.schedule_command``, one call of ``core.runs.schedules``), the answer
shown only to the person who typed it (through the command's ``response_url``)."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncRespond

from bots.chat.schedule_command import answer
from bots.slack.mentions import People
from bots.slack.text import escape, truncate
from core.services import Services
from core.types.place import Place


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
