"""The agent library: agents and cohorts stored for reuse, ranked by similarity and record.

Where things live:

* the **vector index** (local file or Pinecone) holds three vectors per entry, one per
  field (description, prompt, name: see ``fields.py``), with metadata ``kind``, ``field``
  and ``entry``;
* **Redis** holds the entry itself (the spec or cohort as JSON, its name, its description
  text, its terms per field) and its **track record**, one hash per entry, a hash of
  names → ids, and the terms' statistics for BM25 (``lexical_store.py``), through the
  state room's ``core.state.library_store`` (the only room that speaks Redis commands).

Records live in Redis, not in index metadata, because outcomes arrive from many workers
at once: ``HINCRBY`` / ``HINCRBYFLOAT`` update a counter atomically, where index metadata
would need a read-modify-write of the whole item (and Pinecone's metadata is eventually
consistent). An index hit whose entry is gone from Redis is skipped.

A search queries each field for its best ``OVERSAMPLE × k`` hits and ranks the entries
found by their cosines fused with BM25 over their terms, then their record (``search.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

from core.config import LibrarySettings
from core.library.embedder import Embedder
from core.library.errors import EntryNotFoundError, NameTakenError
from core.library.fields import FIELDS, Field, agent_fields, cohort_fields
from core.library.index import Hit, IndexItem, VectorIndex
from core.library.lexical import FieldStats, term_counts, terms
from core.library.lexical_store import LexicalStore, dump_terms, load_terms
from core.library.records import (
    EntryKind,
    LibraryEntry,
    LibraryMatch,
    TrackRecord,
    entry_from_row,
    pick_reusable,
    scaled_rating,
)
from core.library.search import Query, rank
from core.state.keys import Keys
from core.state.library_store import EntryWrite, LibraryStore
from core.types import AgentSpec
from core.types._base import now
from core.types.cohort import Cohort

# Candidates fetched from the index per field and requested result, before re-ranking.
OVERSAMPLE = 4


def vector_id(entry_id: str, field: Field) -> str:
    """The index id of one field's vector of an entry."""
    return f"{entry_id}#{field}"


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
        common_tools: Collection[str] = (),
    ) -> None:
        self.keys = Keys(key_prefix)
        self.store = LibraryStore(redis, self.keys, FIELDS)
        self.index = index
        self.embedder = embedder
        self.settings = settings
        # Tools every agent has (agents.base_tools): left out of the texts embedded.
        self.common_tools = frozenset(common_tools)
        self.prefix = self.keys.library()
        self.lexical = LexicalStore(self.store)

    async def aclose(self) -> None:
        """Close the index (the local one writes itself out). Redis is the caller's."""
        await self.index.aclose()

    # -- saving --------------------------------------------------------------------------------

    async def save_cohort(
        self, cohort: Cohort, *, name: str | None = None, replace: bool = False
    ) -> LibraryEntry:
        """Store ``cohort`` (keyed by its id, found by its task and agents); optionally
        under ``name``."""
        return await self._save("cohort", cohort.id, cohort, name, replace)

    async def save_agent(
        self,
        spec: AgentSpec,
        *,
        name: str | None = None,
        replace: bool = False,
        source_run: str | None = None,
    ) -> LibraryEntry:
        """Store an agent spec, found by its description, prompt, name and tools;
        ``source_run`` = the run it is kept from."""
        return await self._save("agent", spec.id, spec, name, replace, source_run)

    def fields_of(self, item: AgentSpec | Cohort) -> dict[Field, str]:
        """The texts ``item`` is found by."""
        if isinstance(item, Cohort):
            return cohort_fields(item, self.common_tools)
        return agent_fields(item, self.common_tools)

    async def _save(
        self,
        kind: EntryKind,
        entry_id: str,
        item: AgentSpec | Cohort,
        name: str | None,
        replace: bool,
        source_run: str | None = None,
    ) -> LibraryEntry:
        owner = previous = None
        if name is not None:
            owner = await self.store.name_owner(name)
            if owner is not None and owner != entry_id and not replace:
                raise NameTakenError(name, owner)
            previous = await self.store.entry_value(entry_id, "name")
        texts = self.fields_of(item)
        counts = {f: term_counts(texts[f]) for f in FIELDS}
        fields = {"kind": kind, "text": texts["description"], "payload": item.model_dump_json()}
        fields["terms"] = dump_terms(counts)
        if source_run is not None:
            fields["run"] = source_run
        old_terms = load_terms(await self.store.entry_value(entry_id, "terms"))
        await self.store.write(
            EntryWrite(
                entry_id, kind, fields, repr(now()), counts, old_terms, name, owner, previous
            )
        )
        await self.embed(entry_id, kind, texts)
        return await self.get(entry_id)

    async def embed(self, entry_id: str, kind: EntryKind, texts: dict[Field, str]) -> None:
        """(Re)write the entry's vectors in the index, one per field."""
        vectors = await self.embedder.embed([texts[f] for f in FIELDS])
        await self.index.upsert(
            [
                IndexItem(vector_id(entry_id, f), v, {"kind": kind, "field": f, "entry": entry_id})
                for f, v in zip(FIELDS, vectors, strict=True)
            ]
        )

    async def delete(self, entry_id: str) -> None:
        """Forget an entry: its vector, its record and its name."""
        entry = await self.get(entry_id)
        old_terms = load_terms(await self.store.entry_value(entry_id, "terms"))
        await self.index.delete([vector_id(entry_id, f) for f in FIELDS])
        await self.store.delete(entry_id, entry.kind, old_terms, entry.name)

    # -- finding -------------------------------------------------------------------------------

    async def find_cohorts(self, task: str, top_k: int | None = None) -> list[LibraryMatch]:
        """Stored cohorts for a task like ``task``, best score first."""
        return await self._find("cohort", task, top_k)

    async def find_agents(self, text: str, top_k: int | None = None) -> list[LibraryMatch]:
        """Stored agents whose description is like ``text``, best score first."""
        return await self._find("agent", text, top_k)

    async def find_reusable_cohort(self, task: str) -> LibraryMatch | None:
        """The stored cohort to propose again as is for ``task``, if any (pick_reusable)."""
        return pick_reusable(await self.find_cohorts(task), self.settings)

    async def _find(self, kind: EntryKind, text: str, top_k: int | None) -> list[LibraryMatch]:
        k = max(top_k or self.settings.top_k, 2)  # the runner-up counts for direct reuse
        (vector,) = await self.embedder.embed([text])
        words = terms(text)
        per_field, stats = await asyncio.gather(
            asyncio.gather(*(self._query(vector, k, kind, f) for f in FIELDS)),
            self._lexical_stats(kind, words),
        )
        cosines: dict[str, dict[Field, float]] = {}
        floor: dict[Field, float] = {}
        for field, hits in zip(FIELDS, per_field, strict=True):
            floor[field] = min((h.score for h in hits), default=0.0)
            for hit in hits:
                cosines.setdefault(str(hit.metadata.get("entry", "")), {})[field] = hit.score
        rows = await self._load_rows(list(cosines))
        query = Query(cosines, floor, words, stats)
        return rank(query, rows, self.settings, self.fields_of, top_k or self.settings.top_k)

    async def _query(self, vector: list[float], k: int, kind: EntryKind, field: Field) -> list[Hit]:
        return await self.index.query(vector, k * OVERSAMPLE, {"kind": kind, "field": field})

    async def _lexical_stats(
        self, kind: EntryKind, words: list[str]
    ) -> dict[Field, FieldStats] | None:
        if self.settings.lexical_weight == 0:  # the cosines alone: nothing to read
            return None
        return await self.lexical.stats(kind, words)

    async def get(self, entry_id: str) -> LibraryEntry:
        """The entry with this id (raises EntryNotFoundError)."""
        (entry,) = await self._load_many([entry_id])
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    async def get_by_name(self, name: str) -> LibraryEntry:
        """The entry saved under ``name`` (raises EntryNotFoundError)."""
        entry_id = await self.store.name_owner(name)
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
        if not await self.store.bump(entry_id, deltas):
            raise EntryNotFoundError(entry_id)
        return (await self.get(entry_id)).record

    # -- storage -------------------------------------------------------------------------------

    def entry_key(self, entry_id: str) -> str:
        return self.keys.library_entry(entry_id)

    async def exists(self, entry_id: str) -> bool:
        """Whether an entry with this id is stored."""
        return await self.store.exists(entry_id)

    async def _load_rows(self, ids: list[str]) -> dict[str, dict[str, str]]:
        """The Redis hash of each entry (empty for one that is gone)."""
        return await self.store.rows(ids)

    async def _load_many(self, ids: list[str]) -> list[LibraryEntry | None]:
        rows = await self._load_rows(ids)
        return [entry_from_row(i, rows[i]) if rows[i] else None for i in ids]
