"""The agent library's side in Redis (``keys.library*``): each entry's hash (its kind,
payload, texts, terms, name and track record), the names → ids hash, the BM25 term
statistics per kind and field, and the markers (with their locks) of the index format and
the lexical version.

Writes that touch several keys (an entry with its name and its terms' counts) are one
MULTI/EXEC. Part of the state room, the only room that speaks Redis commands
(``core.state``); it may call the Redis client and ``core.state.keys``. What an entry,
a term and a statistic mean lives above, in ``core.library``; here they are strings and
counters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redis.asyncio import Redis

from core.state.keys import Keys

# Terms per field, as counted for one entry.
FieldTerms = Mapping[Any, Mapping[str, int]]

DOCS = "#docs"
LENGTH = "#length"


@dataclass(frozen=True)
class EntryWrite:
    """One entry saved: its hash fields, the terms it adds and those it no longer holds
    (saved again), and its name (moved from ``owner``, replacing ``previous``)."""

    entry_id: str
    kind: str
    fields: Mapping[str, str]
    created_at: str
    terms: FieldTerms
    old_terms: FieldTerms | None = None
    name: str | None = None
    owner: str | None = None
    previous: str | None = None


class _Wired(Protocol):
    """What a process's Services hold (``core.process.wiring``): its Redis client."""

    @property
    def redis(self) -> Redis: ...


class LibraryStore:
    """Entries, names and term statistics of one deployment's library."""

    @classmethod
    def reading(cls, svc: _Wired, key_prefix: str) -> LibraryStore:
        """The store through the process's own client (``svc``: its Services), for reading
        rows (no field list: the rows as stored)."""
        return cls(svc.redis, Keys(key_prefix), ())

    def __init__(self, redis: Redis, keys: Keys, fields: Sequence[str]) -> None:
        self.redis = redis
        self.keys = keys
        self.fields = tuple(fields)

    # --- entries ------------------------------------------------------------------------

    async def name_owner(self, name: str) -> str | None:
        """The id of the entry saved under ``name``, if any."""
        found: Any = await self.redis.hget(self.keys.library_names(), name)
        return None if found is None else str(found)

    async def entry_value(self, entry_id: str, name: str) -> str | None:
        """One field of an entry's hash."""
        found: Any = await self.redis.hget(self.keys.library_entry(entry_id), name)
        return None if found is None else str(found)

    async def exists(self, entry_id: str) -> bool:
        return bool(await self.redis.exists(self.keys.library_entry(entry_id)))

    async def write(self, w: EntryWrite) -> None:
        """Save an entry, its name and its terms' counts in one transaction."""
        key, names = self.keys.library_entry(w.entry_id), self.keys.library_names()
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=dict[Any, Any](w.fields))
            if w.old_terms is not None:  # saved again: its old terms no longer count
                self._count(pipe, w.kind, w.old_terms, -1)
            self._count(pipe, w.kind, w.terms)
            pipe.hsetnx(key, "created_at", w.created_at)
            if w.name is not None:
                if w.owner not in (None, w.entry_id):  # the name moves: its old entry loses it
                    pipe.hdel(self.keys.library_entry(str(w.owner)), "name")
                if w.previous not in (None, w.name):  # one name per entry
                    pipe.hdel(names, str(w.previous))
                pipe.hset(key, "name", w.name)
                pipe.hset(names, w.name, w.entry_id)
            await pipe.execute()

    async def delete(
        self, entry_id: str, kind: str, old_terms: FieldTerms | None, name: str | None
    ) -> None:
        """Forget an entry, uncount its terms and free its name, in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.library_entry(entry_id))
            if old_terms is not None:
                self._count(pipe, kind, old_terms, -1)
            if name is not None:
                pipe.hdel(self.keys.library_names(), name)
            await pipe.execute()

    async def bump(self, entry_id: str, deltas: Mapping[str, float]) -> bool:
        """Add ``deltas`` to an entry's counters (``rating_sum`` is a float); False when
        there is no such entry."""
        key = self.keys.library_entry(entry_id)
        if not await self.redis.exists(key):
            return False
        async with self.redis.pipeline(transaction=True) as pipe:
            for name, delta in deltas.items():
                if name == "rating_sum":
                    pipe.hincrbyfloat(key, name, delta)
                elif delta:
                    pipe.hincrby(key, name, int(delta))
            await pipe.execute()
        return True

    async def rows(self, ids: list[str]) -> dict[str, dict[str, str]]:
        """The hash of each entry (empty for one that is gone), in one round trip."""
        if not ids:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for entry_id in ids:
                pipe.hgetall(self.keys.library_entry(entry_id))
            return dict(zip(ids, await pipe.execute(), strict=True))

    async def stored(self, entry_id: str) -> tuple[str | None, str | None]:
        """An entry's kind and payload (its spec or cohort as JSON)."""
        row: Any = await self.redis.hmget(self.keys.library_entry(entry_id), ["kind", "payload"])
        return row[0], row[1]

    async def entry_ids(self, batch: int) -> AsyncIterator[str]:
        """Every stored entry's id (a scan: entries saved meanwhile may be missed)."""
        pattern = self.keys.library_entry("*")
        async for key in self.redis.scan_iter(match=pattern, count=batch):
            yield str(key).rsplit(":", 1)[-1]

    async def remember_run_agents(self, run_id: str, entry_ids: list[str], ttl_s: int) -> None:
        """Keep, for ``ttl_s``, the entries a run's agents counted for (its ratings)."""
        key = self.keys.library_run_agents(run_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.sadd(key, *entry_ids)
            pipe.expire(key, ttl_s)
            await pipe.execute()

    async def run_agents(self, run_id: str) -> list[str]:
        """The entries a run's agents counted for, sorted."""
        found: Any = await self.redis.smembers(self.keys.library_run_agents(run_id))
        return sorted(found)

    # --- term statistics ----------------------------------------------------------------

    def _count(self, pipe: Any, kind: str, terms: FieldTerms, sign: int = 1) -> None:
        for name, counts in terms.items():
            key = self.keys.library_lexical(kind, name)
            pipe.hincrby(key, DOCS, sign)
            pipe.hincrby(key, LENGTH, sign * sum(counts.values()))
            for term in counts:
                pipe.hincrby(key, term, sign)

    async def recount(self, entry_id: str, kind: str, dumped: str, terms: FieldTerms) -> None:
        """Keep an entry's terms (``dumped``) and count them, in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.library_entry(entry_id), "terms", dumped)
            self._count(pipe, kind, terms)
            await pipe.execute()

    async def term_rows(self, kind: str, wanted: list[str]) -> list[list[Any]]:
        """For each field: the counts of ``wanted`` (``#docs``, ``#length``, terms…)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in self.fields:
                pipe.hmget(self.keys.library_lexical(kind, name), wanted)
            rows: list[list[Any]] = await pipe.execute()
        return rows

    async def clear_terms(self, kinds: Sequence[str]) -> None:
        """Forget every term statistic of ``kinds`` (before counting them again)."""
        await self.redis.delete(
            *(self.keys.library_lexical(k, f) for k in kinds for f in self.fields)
        )

    # --- markers (the index format, the lexical version) --------------------------------

    async def marker(self, key: str) -> str | None:
        found: Any = await self.redis.get(key)
        return None if found is None else str(found)

    async def set_marker(self, key: str, value: str) -> None:
        await self.redis.set(key, value)

    async def lock(self, key: str, ttl_s: int) -> bool:
        """Take the rebuild lock of ``key``; False when another process holds it."""
        return bool(await self.redis.set(Keys.lock(key), "1", nx=True, ex=ttl_s))

    async def unlock(self, key: str) -> None:
        await self.redis.delete(Keys.lock(key))
