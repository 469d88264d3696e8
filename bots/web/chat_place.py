"""Where the web chat's schedules post (one place: ``web:web:chat``, "the web chat"), and
its schedules as the chat pages list them (beside every chat, with Pause / Resume /
Delete: ``bots.web.chat_schedules``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.runs import schedules as plans
from core.types.place import Place
from core.types.schedules import Schedule

if TYPE_CHECKING:
    from core.services import Services

WEB_PLACE = Place(
    platform="web", workspace="web", channel="chat", workspace_name="", channel_name="the web chat"
)


async def web_schedules(svc: Services) -> tuple[Schedule, ...]:
    """The web chat's schedules, the soonest first."""
    return (await plans.listed(svc, WEB_PLACE)).schedules
