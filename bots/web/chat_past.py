"""The web chat's past chats: the newest runs asked for from the web chat, newest first,
each with its task, its status in words and when it was asked (for the list beside a
chat and under a new request)."""

from __future__ import annotations

from dataclasses import dataclass

from bots.web.chat_view import status_words
from core.state.listing import newest_runs
from core.state.store import Store

# How many of the newest runs are looked through for the web chat's own.
_LOOKED_AT = 200


@dataclass(frozen=True)
class PastChat:
    id: str
    task: str
    status: str
    at: float


async def past_chats(store: Store, person: str, limit: int) -> list[PastChat]:
    """The newest ``limit`` runs ``person`` asked for, newest first."""
    runs = await newest_runs(store, max(limit, _LOOKED_AT))
    mine = [run for run, _usage in runs if run.requested_by == person]
    return [PastChat(r.id, r.task, status_words(r.status), r.created_at) for r in mine[:limit]]
