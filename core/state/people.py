"""What the people room (``core.runs.people``) keeps in Redis: one vote per person and
run on its result, a hint given once per person and run (why a reply in the run's
thread reached nobody), each one ``SET NX`` with a time to live; and the name each
person was last seen under, so that pages holding only their id (the inspector, the web
chat) name them. Keys are named in ``core.state.keys``. Called by the people room and
the pages that name people."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.state.keys import Keys
from core.state.store import Store

# How long a vote is remembered (a later one counts again), and a hint given.
VOTE_TTL_S = 90 * 24 * 3600
HINT_TTL_S = 7 * 24 * 3600
# How long a person's name is remembered after they last acted.
NAME_TTL_S = 90 * 24 * 3600


class PeopleMarks:
    """Votes and hints, in the Redis of the core ``store``."""

    def __init__(self, store: Store) -> None:
        self.redis: Any = store.redis
        self.keys: Keys = store.keys

    async def vote(self, run_id: str, person_id: str, value: str) -> bool:
        """Keep the person's vote on the run (``up``, ``down``, a number of stars);
        False if they voted already (here, or in Slack or Discord before the upgrade)."""
        if await self.redis.exists(*self.keys.old_votes(run_id, person_id)):
            return False
        key = self.keys.vote(run_id, person_id)
        return bool(await self.redis.set(key, value, nx=True, ex=VOTE_TTL_S))

    async def unvote(self, run_id: str, person_id: str) -> None:
        """Forget the vote (it could not be counted: the person may vote again)."""
        await self.redis.delete(self.keys.vote(run_id, person_id))

    async def first_hint(self, run_id: str, person_id: str) -> bool:
        """True the first time the person is given a hint in the run's thread."""
        key = self.keys.hinted(run_id, person_id)
        return bool(await self.redis.set(key, "1", nx=True, ex=HINT_TTL_S))

    async def remember(self, person_id: str, name: str) -> None:
        """Keep ``name`` as the person's (one that is only their id is not kept)."""
        if name and name != person_id:
            await self.redis.set(self.keys.person_name(person_id), name, ex=NAME_TTL_S)

    async def names(self, person_ids: Iterable[str]) -> dict[str, str]:
        """The names kept for ``person_ids`` (those unknown are left out)."""
        ids = list(dict.fromkeys(i for i in person_ids if i))
        found = await self.redis.mget([self.keys.person_name(i) for i in ids]) if ids else []
        return {i: n for i, n in zip(ids, found, strict=True) if n}
