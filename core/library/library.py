"""The agent library: agents and cohorts stored for reuse, ranked by similarity and record.

Where things live:

* the **vector index** (local file or Pinecone) holds one vector per entry — the
  embedding of a cohort's task or an agent's description — with metadata ``kind``;
* **Redis** holds the entry itself (the spec or cohort as JSON, its name, the embedded
  text) and its **track record**, one hash per entry, plus a hash of names → ids.

Records live in Redis, not in index metadata, because outcomes arrive from many workers
at once: ``HINCRBY`` / ``HINCRBYFLOAT`` update a counter atomically, where index metadata
would need a read-modify-write of the whole item (and Pinecone's metadata is eventually
consistent). An index hit whose entry is gone from Redis is skipped.
"""

from __future__ import annotations

import json
from typing import Any

from core.config import LibrarySettings
from core.errors import UsageError
from core.library.embedder import Embedder
from core.library.index import IndexItem, VectorIndex
from core.library.records import (
    EntryKind,
    LibraryEntry,
    LibraryMatch,
    TrackRecord,
    rank_score,
    scaled_rating,
)
from core.types import AgentSpec
from core.types._base import now
from core.types.cohort import Cohort

# Candidates fetched from the index per requested result, before re-ranking by record.
OVERSAMPLE = 4
_COUNTERS = ("runs", "successes", "approvals", "rejections", "ratings")


class EntryNotFoundError(UsageError):
    """No library entry has this id or name."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"no agent or cohort named or with id {key!r} in the library",
            hint="look it up with find_cohorts / find_agents, or save it first",
        )


class NameTakenError(UsageError):
    """Another entry is already saved under this name."""

    def __init__(self, name: str, entry_id: str) -> None:
        self.name = name
        self.entry_id = entry_id
        super().__init__(
            f"the name {name!r} already belongs to library entry {entry_id}",
            hint="choose another name, or save with replace=True to move the name",
        )


class Library:
    """Save, find and score agents and cohorts. All methods are safe to call concurrently."""

    def __init__(
        self,
        redis: Any,
        index: VectorIndex,
        embedder: Embedder,
        settings: LibrarySettings,
        *,
        key_prefix: str = "caramba",
    ) -> None:
        self.redis = redis
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self._prefix = f"{key_prefix}:library"

    async def aclose(self) -> None:
        """Close the index (the local one writes itself out). Redis is the caller's."""
        await self.index.aclose()

    # -- saving --------------------------------------------------------------------------------

    async def save_cohort(
        self, cohort: Cohort, *, name: str | None = None, replace: bool = False
    ) -> LibraryEntry:
        """Store ``cohort`` (keyed by its id, found by its task); optionally under ``name``."""
        return await self._save("cohort", cohort.id, cohort.task, cohort, name, replace)

    async def save_agent(
        self, spec: AgentSpec, *, name: str | None = None, replace: bool = False
    ) -> LibraryEntry:
        """Store an agent spec, found by its description (else its name and prompt)."""
        text = spec.description or f"{spec.name}: {spec.system_prompt[:1000]}"
        return await self._save("agent", spec.id, text, spec, name, replace)

    async def _save(
        self,
        kind: EntryKind,
        entry_id: str,
        text: str,
        item: AgentSpec | Cohort,
        name: str | None,
        replace: bool,
    ) -> LibraryEntry:
        key = self._entry_key(entry_id)
        owner = previous = None
        if name is not None:
            owner = await self.redis.hget(self._names_key, name)
            if owner not in (None, entry_id) and not replace:
                raise NameTakenError(name, owner)
            previous = await self.redis.hget(key, "name")
        (vector,) = await self.embedder.embed([text])
        fields = {"kind": kind, "text": text, "payload": item.model_dump_json()}
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.hsetnx(key, "created_at", repr(now()))
            if name is not None:
                if owner not in (None, entry_id):  # the name moves: its old entry loses it
                    pipe.hdel(self._entry_key(owner), "name")
                if previous not in (None, name):  # one name per entry
                    pipe.hdel(self._names_key, previous)
                pipe.hset(key, "name", name)
                pipe.hset(self._names_key, name, entry_id)
            await pipe.execute()
        await self.index.upsert([IndexItem(entry_id, vector, {"kind": kind})])
        return await self.get(entry_id)

    async def delete(self, entry_id: str) -> None:
        """Forget an entry: its vector, its record and its name."""
        entry = await self.get(entry_id)
        await self.index.delete([entry_id])
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._entry_key(entry_id))
            if entry.name is not None:
                pipe.hdel(self._names_key, entry.name)
            await pipe.execute()

    # -- finding -------------------------------------------------------------------------------

    async def find_cohorts(self, task: str, top_k: int | None = None) -> list[LibraryMatch]:
        """Stored cohorts for a task like ``task``, best score first."""
        return await self._find("cohort", task, top_k)

    async def find_agents(self, text: str, top_k: int | None = None) -> list[LibraryMatch]:
        """Stored agents whose description is like ``text``, best score first."""
        return await self._find("agent", text, top_k)

    async def find_reusable_cohort(self, task: str) -> LibraryMatch | None:
        """The best cohort similar enough to reuse as is, with a good enough record."""
        for match in await self.find_cohorts(task):
            if (
                match.similarity >= self.settings.reuse_threshold
                and match.quality >= self.settings.reuse_min_quality
            ):
                return match
        return None

    async def _find(self, kind: EntryKind, text: str, top_k: int | None) -> list[LibraryMatch]:
        k = top_k or self.settings.top_k
        (vector,) = await self.embedder.embed([text])
        hits = await self.index.query(vector, k * OVERSAMPLE, {"kind": kind})
        entries = await self._load_many([hit.id for hit in hits])
        matches = []
        for hit, entry in zip(hits, entries, strict=True):
            if entry is None:  # the index outlived Redis (embedded mode restarted)
                continue
            quality = entry.record.quality(self.settings.prior_mean, self.settings.prior_weight)
            score = rank_score(hit.score, quality, self.settings.record_weight)
            matches.append(
                LibraryMatch(entry=entry, similarity=hit.score, quality=quality, score=score)
            )
        matches.sort(key=lambda m: m.score, reverse=True)
        return matches[:k]

    async def get(self, entry_id: str) -> LibraryEntry:
        """The entry with this id (raises EntryNotFoundError)."""
        (entry,) = await self._load_many([entry_id])
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    async def get_by_name(self, name: str) -> LibraryEntry:
        """The entry saved under ``name`` (raises EntryNotFoundError)."""
        entry_id = await self.redis.hget(self._names_key, name)
        if entry_id is None:
            raise EntryNotFoundError(name)
        return await self.get(entry_id)

    # -- learning ------------------------------------------------------------------------------

    async def record_run(self, entry_id: str, *, success: bool) -> TrackRecord:
        """A run of this agent or cohort ended, well or not."""
        return await self._bump(entry_id, runs=1, successes=int(success))

    async def record_decision(self, entry_id: str, *, approved: bool) -> TrackRecord:
        """People approved or rejected a proposal that reused this entry."""
        return await self._bump(entry_id, approvals=int(approved), rejections=int(not approved))

    async def record_feedback(
        self, entry_id: str, *, thumbs_up: bool | None = None, stars: int | None = None
    ) -> TrackRecord:
        """A thumbs up/down or a 1..5 star rating from a person."""
        value = scaled_rating(thumbs_up=thumbs_up, stars=stars)
        return await self._bump(entry_id, ratings=1, rating_sum=value)

    async def _bump(self, entry_id: str, **deltas: float) -> TrackRecord:
        key = self._entry_key(entry_id)
        if not await self.redis.exists(key):
            raise EntryNotFoundError(entry_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            for field, delta in deltas.items():
                if field == "rating_sum":
                    pipe.hincrbyfloat(key, field, delta)
                elif delta:
                    pipe.hincrby(key, field, int(delta))
            await pipe.execute()
        return (await self.get(entry_id)).record

    # -- storage -------------------------------------------------------------------------------

    @property
    def _names_key(self) -> str:
        return f"{self._prefix}:names"

    def _entry_key(self, entry_id: str) -> str:
        return f"{self._prefix}:entry:{entry_id}"

    async def _load_many(self, ids: list[str]) -> list[LibraryEntry | None]:
        if not ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for entry_id in ids:
                pipe.hgetall(self._entry_key(entry_id))
            rows = await pipe.execute()
        return [_entry(i, row) if row else None for i, row in zip(ids, rows, strict=True)]


def _entry(entry_id: str, row: dict[str, str]) -> LibraryEntry:
    payload = json.loads(row["payload"])
    kind: EntryKind = "cohort" if row["kind"] == "cohort" else "agent"
    record = TrackRecord(
        **{name: int(row.get(name, 0)) for name in _COUNTERS},
        rating_sum=float(row.get("rating_sum", 0.0)),
    )
    return LibraryEntry(
        id=entry_id,
        kind=kind,
        name=row.get("name"),
        text=row["text"],
        agent=AgentSpec.model_validate(payload) if kind == "agent" else None,
        cohort=Cohort.model_validate(payload) if kind == "cohort" else None,
        record=record,
        created_at=float(row.get("created_at", 0.0)),
    )
