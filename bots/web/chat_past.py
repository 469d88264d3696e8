"""The web chat's past chats: the newest runs asked for from the web chat, newest first,
each with its task, its status in words and when it was asked (for the list beside a
chat and under a new request)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bots.web.chat_view import status_words
from core.state.listing import newest_runs
from core.state.store import Store

# How many of the newest runs are looked through for the web chat's own.
_LOOKED_AT = 100
# A chat page is fetched again on every change of its thread: the list is read again
# at most this often (per process).
FRESH_S = 3.0


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


@dataclass
class PastChats:
    """The past chats of ``person``, read at most every ``FRESH_S`` seconds."""

    store: Store
    person: str
    limit: int
    _read_at: float = field(default=float("-inf"), init=False)
    _chats: list[PastChat] = field(default_factory=list, init=False)

    async def get(self) -> list[PastChat]:
        now = time.monotonic()
        if now - self._read_at >= FRESH_S:
            self._chats = await past_chats(self.store, self.person, self.limit)
            self._read_at = now
        return self._chats

    def forget(self) -> None:
        """Read the list again next time (a chat was just started)."""
        self._read_at = float("-inf")
