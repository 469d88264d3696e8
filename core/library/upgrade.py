"""Keeping the index in the library's format: entries stored by an older Caramba are
re-embedded from what Redis holds of them.

Format 1 (issue 5) kept one vector per entry, under the entry's id, embedded from its
description or task. Format 2 keeps one per field (``fields.py``), under
``<entry id>#<field>``. Redis holds every entry whole (its spec or cohort), so an old
library is rebuilt rather than refused: the first process to open it (one at a time, by a
lock) re-embeds every entry and deletes the old vectors, then marks the format in Redis.
Until then a search finds no old entry (they have no field vectors), which is safe: the
planner designs from scratch meanwhile.

The lexical scoring (``lexical.py``) keeps each entry's terms in its hash and their
statistics beside them; entries saved before it, or with terms of another
``lexical.VERSION``, have them rebuilt the same way (no re-embedding): the statistics are
cleared and every entry's terms counted again. Until then they are scored on the terms of
their texts, worked out at query time.
"""

from __future__ import annotations

import logging

from core.library.fields import FIELDS
from core.library.lexical import VERSION, term_counts
from core.library.lexical_store import dump_terms
from core.library.library import Library
from core.library.records import EntryKind
from core.types import AgentSpec
from core.types.cohort import Cohort

log = logging.getLogger(__name__)

FORMAT = "2"
_LOCK_S = 600
_BATCH = 100


def _format_key(library: Library) -> str:
    return library.keys.library_format()


async def ensure_format(library: Library) -> int:
    """Re-embed the entries of an older format; how many this call re-embedded (0 when the
    library is current, or another process is rebuilding it). Then ensure_lexical."""
    store, key = library.store, _format_key(library)
    if await store.marker(key) == FORMAT:
        await ensure_lexical(library)
        return 0
    if not await store.lock(key, _LOCK_S):
        return 0
    try:
        done = 0
        async for entry_id in store.entry_ids(_BATCH):
            done += await _reembed(library, entry_id)
        await store.set_marker(key, FORMAT)
    finally:
        await store.unlock(key)
    if done:
        log.info("library: re-embedded %d entries for index format %s", done, FORMAT)
    await ensure_lexical(library)
    return done


async def ensure_lexical(library: Library) -> int:
    """Count every entry's terms again if they are of another lexical.VERSION (or none);
    how many entries this call counted (0 when current, or another process is at it)."""
    store, key = library.store, library.lexical.version_key
    if await store.marker(key) == VERSION:
        return 0
    if not await store.lock(key, _LOCK_S):
        return 0
    try:
        await library.lexical.clear()
        done = 0
        async for entry_id in store.entry_ids(_BATCH):
            done += await _recount(library, entry_id)
        await store.set_marker(key, VERSION)
    finally:
        await store.unlock(key)
    if done:
        log.info("library: counted the terms of %d entries (lexical version %s)", done, VERSION)
    return done


async def _recount(library: Library, entry_id: str) -> int:
    kind, item = await _stored(library, entry_id)
    if item is None:
        return 0
    texts = library.fields_of(item)
    counts = {f: term_counts(texts[f]) for f in FIELDS}
    await library.store.recount(entry_id, kind, dump_terms(counts), counts)
    return 1


async def _stored(library: Library, entry_id: str) -> tuple[EntryKind, AgentSpec | Cohort | None]:
    """An entry's kind and its spec or cohort, from its hash (None: not an entry)."""
    kind, payload = await library.store.stored(entry_id)
    if payload is None:
        return "agent", None
    if kind == "cohort":
        return "cohort", Cohort.model_validate_json(payload)
    return "agent", AgentSpec.model_validate_json(payload)


async def _reembed(library: Library, entry_id: str) -> int:
    kind, item = await _stored(library, entry_id)
    if item is None:
        return 0
    await library.embed(entry_id, kind, library.fields_of(item))
    await library.index.delete([entry_id])  # the format-1 vector
    return 1
