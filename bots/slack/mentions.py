"""A mention's text as a task: the bot's own mention taken out, people's mentions kept as
their names (agents can use a name; a ``<@U…>`` code means nothing to them), and who may
ask at all: people, and only the bots allow-listed in ``slack.allow_bots``.

Names come from ``users.info`` (the ``users:read`` scope), once per person and process;
a name Slack will not give stays the mention's own label, else "someone".

The two "who" ports of the people room (``core.types.people.Who``): :class:`People`
names a person in words kept beyond Slack (a run's end: "cancelled by Ana");
:class:`Mentions` names people in a message only Slack shows (a refusal), as a mention
Slack itself turns into their name (and that pings nobody in a message only the clicker
sees).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.text import escape
from core.types.people import Person

log = logging.getLogger(__name__)
# <@U123>, <@W123> (Enterprise Grid) and <@U123|label> (older clients and some apps).
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
# Names at most this long, kept in the process: one entry per person who was mentioned.
_NAME_CHARS = 80
# How long a click waits for its clicker's name before going on without it.
NAME_WAIT_S = 3.0


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

    async def person(self, user_id: str, wait_s: float = NAME_WAIT_S) -> Person:
        """The Slack user ``user_id`` as the people room takes them, by name (asked of
        Slack unless known, for at most ``wait_s``: a Cancel does not wait on a slow
        Slack): for what keeps their name (a run's end)."""
        try:
            name = await asyncio.wait_for(self.name(user_id), wait_s)
        except TimeoutError:
            name = self.names.get(user_id, "someone")
        return Person(id=user_id, name=name)

    def known(self, user_id: str) -> Person:
        """``user_id`` with the name this process knows, without asking Slack: for
        what Slack shows as a mention anyway, or names nobody (a request, a vote)."""
        return Person(id=user_id, name=self.names.get(user_id, "someone"))


def mark(user_id: str) -> str:
    """A user id marked so that, after the text is escaped, :func:`shown` turns it into
    a mention."""
    return f"\x00{user_id}\x00"


# Only Slack user ids (letters and digits) become mentions; anything else stays as text.
_MARKED = re.compile(r"\x00([A-Z0-9]{2,32})\x00")


class Mentions:
    """Slack's who port for messages only Slack shows: each person as a mention."""

    async def name(self, user_id: str) -> str:
        return mark(user_id)


MENTIONS = Mentions()


def shown(text: str) -> str:
    """Core's ``text`` escaped for mrkdwn, people marked by :class:`Mentions` as
    mentions."""
    return _MARKED.sub(r"<@\1>", escape(text))


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
