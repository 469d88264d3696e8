"""What the adapter's listener modules (``decisions``, ``budget``, ``feedback``) work
with, handed over by the bot (``bots.slack.app``) so that they need not know it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.redraw import Redraws
from bots.slack.mentions import People
from core.services import Services


@dataclass(frozen=True)
class SlackContext:
    """One bot's parts: the Bolt ``app`` to add listeners to, the core ``svc``, the Web
    API ``client``, ``spawn`` to run work after a listener acknowledged (errors logged),
    ``people`` (Slack users as the people room takes them) and ``redraws`` (a message
    redrawn after a click goes through them). Not Bolt's per-request ``context``."""

    app: AsyncApp
    svc: Services
    client: AsyncWebClient
    spawn: Callable[[Coroutine[Any, Any, None]], None]
    people: People
    redraws: Redraws
