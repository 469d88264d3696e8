"""What the Discord bot keeps in Redis beside the chat layer's threads (``bots.chat.threads``),
under ``{redis.key_prefix}:discord:``: which message is a run's result (its 👍/👎 count
for the run), people's names (a refusal names who asked, not an id), the
messages already handled (several bot processes may hear the same event) and the votes
already counted."""

from __future__ import annotations

from typing import Any

# How long a result message stays linked to its run (votes arrive there).
THREAD_TTL_S = 7 * 24 * 3600
NAME_TTL_S = 30 * 24 * 3600
DEDUPE_TTL_S = 3600
# How long a vote is remembered (a later one counts again).
VOTE_TTL_S = 90 * 24 * 3600


class Links:
    def __init__(self, redis: Any, key_prefix: str) -> None:
        self.redis = redis
        self.prefix = f"{key_prefix}:discord"

    async def first_time(self, what: str) -> bool:
        """True once per ``what`` (a message id, a hint given)."""
        key = f"{self.prefix}:seen:{what}"
        return bool(await self.redis.set(key, "1", nx=True, ex=DEDUPE_TTL_S))

    async def result_of(self, message_id: int | str) -> str | None:
        run_id: str | None = await self.redis.get(f"{self.prefix}:result:{message_id}")
        return run_id

    async def mark_result(self, message_id: int | str, run_id: str) -> None:
        await self.redis.set(f"{self.prefix}:result:{message_id}", run_id, ex=THREAD_TTL_S)

    async def remember_name(self, user_id: int | str, name: str) -> None:
        await self.redis.set(f"{self.prefix}:name:{user_id}", name, ex=NAME_TTL_S)

    async def names(self, user_ids: list[str]) -> dict[str, str]:
        """The names known for ``user_ids`` (those unknown are left out)."""
        if not user_ids:
            return {}
        found = await self.redis.mget([f"{self.prefix}:name:{u}" for u in user_ids])
        return {u: n for u, n in zip(user_ids, found, strict=True) if n}

    async def vote(self, run_id: str, user_id: int | str, up: bool) -> bool:
        """Whether this is ``user_id``'s first vote on the run (then it is kept)."""
        key = f"{self.prefix}:vote:{run_id}:{user_id}"
        return bool(await self.redis.set(key, "up" if up else "down", nx=True, ex=VOTE_TTL_S))

    async def unvote(self, run_id: str, user_id: int | str) -> None:
        await self.redis.delete(f"{self.prefix}:vote:{run_id}:{user_id}")
