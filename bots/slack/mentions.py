"""A mention's text as a task: the bot's own mention taken out, people's mentions kept as
their names (agents can use a name; a ``<@U…>`` code means nothing to them), and who may
ask at all: people, and only the bots allow-listed in ``slack.allow_bots``.

Names come from ``users.info`` (the ``users:read`` scope), once per person and process;
a name Slack will not give stays the mention's own label, else "someone".
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)
# <@U123>, <@W123> (Enterprise Grid) and <@U123|label> (older clients and some apps).
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
# Names at most this long, kept in the process: one entry per person who was mentioned.
_NAME_CHARS = 80


class People:
    """Slack user id → the name people see, asked of Slack once per process."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self.names: dict[str, str] = {}

    async def name(self, user_id: str, label: str = "") -> str:
        if user_id in self.names:
            return self.names[user_id]
        try:
            response = await self.client.users_info(user=user_id)
            user: dict[str, Any] = response.get("user") or {}
        except Exception as exc:  # no users:read scope, Slack down: the label will do
            log.debug("no name for %s: %s", user_id, exc)
            return label or "someone"
        profile = user.get("profile") or {}
        name = (
            profile.get("display_name")
            or profile.get("real_name")
            or user.get("real_name")
            or user.get("name")
            or label
            or "someone"
        )
        self.names[user_id] = " ".join(str(name).split())[:_NAME_CHARS]
        return self.names[user_id]


async def task_text(text: str, bot_user_id: str | None, people: People) -> str:
    """``text`` without the bot's mentions, every other person's mention as ``@Name``,
    its spacing tidied (empty: the mention held no task)."""
    parts: list[str] = []
    at = 0
    for match in _USER.finditer(text):
        parts.append(text[at : match.start()])
        user_id, label = match.group(1), match.group(2) or ""
        if user_id != bot_user_id:
            parts.append("@" + await people.name(user_id, label))
        at = match.end()
    parts.append(text[at:])
    lines = (" ".join(line.split()) for line in "".join(parts).splitlines())
    return "\n".join(line for line in lines if line).strip()


def from_bot(event: dict[str, Any], allowed: tuple[str, ...]) -> bool:
    """Whether ``event`` was sent by a bot that is not allow-listed (by bot id or user
    id): such mentions are ignored, or two bots could keep each other planning."""
    bot_id = event.get("bot_id") or (event.get("bot_profile") or {}).get("id")
    if not bot_id and event.get("subtype") != "bot_message":
        return False
    return not ({bot_id, event.get("user")} & set(allowed))
