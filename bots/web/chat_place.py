"""Where the web chat's schedules post (one place: ``web:web:chat``, "the web chat"), and
its schedules as the chat pages list them (beside every chat, with Pause / Resume /
Delete: ``bots.web.chat_schedules``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from core.runs import schedules as plans
from core.state.client import StateError
from core.types.place import Place
from core.types.schedules import Schedule

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)
WEB_PLACE = Place(
    platform="web", workspace="web", channel="chat", workspace_name="", channel_name="the web chat"
)


async def web_schedules(svc: Services) -> tuple[Schedule, ...] | None:
    """The web chat's schedules, the soonest first; None if Redis did not answer (the
    chat pages still show, saying the list could not be read)."""
    try:
        return (await plans.listed(svc, WEB_PLACE)).schedules
    except StateError:
        log.warning("could not read the web chat's schedules", exc_info=True)
        return None
