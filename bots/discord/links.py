"""What the Discord bot keeps beside the chat layer's threads (``bots.chat.threads``), in
the chat layer's store (``bots.chat.store``) under ``{redis.key_prefix}:discord:``: which
message is a run's result (its 👍/👎 count for the run), people's names (a refusal names
who asked, not an id) and the messages already handled (several bot processes may hear
the same event). Votes are the people room's (``core.runs.people.rate``)."""

from __future__ import annotations

from bots.chat.store import ChatStore

# How long a result message stays linked to its run (votes arrive there).
THREAD_TTL_S = 7 * 24 * 3600
NAME_TTL_S = 30 * 24 * 3600
DEDUPE_TTL_S = 3600


class Links:
    """Discord's own records, in its chat ``store``."""

    def __init__(self, store: ChatStore) -> None:
        self.store, self.keys = store, store.keys

    async def first_time(self, what: str) -> bool:
        """True once per ``what`` (a message id, a hint given)."""
        return await self.store.once(self.keys.seen(what), DEDUPE_TTL_S)

    async def result_of(self, message_id: int | str) -> str | None:
        return await self.store.get(self.keys.result(str(message_id)))

    async def mark_result(self, message_id: int | str, run_id: str) -> None:
        await self.store.put(self.keys.result(str(message_id)), run_id, THREAD_TTL_S)

    async def remember_name(self, user_id: int | str, name: str) -> None:
        await self.store.put(self.keys.name(str(user_id)), name, NAME_TTL_S)

    async def names(self, user_ids: list[str]) -> dict[str, str]:
        """The names known for ``user_ids`` (those unknown are left out)."""
        found = await self.store.get_many([self.keys.name(u) for u in user_ids])
        return {u: n for u, n in zip(user_ids, found, strict=True) if n}
