"""Keeping the index in the library's format: entries stored by an older Caramba are
re-embedded from what Redis holds of them.

Format 1 (issue 5) kept one vector per entry, under the entry's id, embedded from its
description or task. Format 2 keeps one per field (``fields.py``), under
``<entry id>#<field>``. Redis holds every entry whole (its spec or cohort), so an old
library is rebuilt rather than refused: the first process to open it (one at a time, by a
lock) re-embeds every entry and deletes the old vectors, then marks the format in Redis.
Until then a search finds no old entry (they have no field vectors), which is safe: the
planner designs from scratch meanwhile.
"""

from __future__ import annotations

import logging
from typing import Any

from core.library.library import Library
from core.types import AgentSpec
from core.types.cohort import Cohort

log = logging.getLogger(__name__)

FORMAT = "2"
_LOCK_S = 600
_BATCH = 100


def _format_key(library: Library) -> str:
    return f"{library.prefix}:format"


async def ensure_format(library: Library) -> int:
    """Re-embed the entries of an older format; how many this call re-embedded (0 when the
    library is current, or another process is rebuilding it)."""
    redis: Any = library.redis
    key = _format_key(library)
    if await redis.get(key) == FORMAT:
        return 0
    if not await redis.set(f"{key}:lock", "1", nx=True, ex=_LOCK_S):
        return 0
    try:
        done = 0
        async for entry_key in redis.scan_iter(match=library.entry_key("*"), count=_BATCH):
            done += await _reembed(library, entry_key.rsplit(":", 1)[-1])
        await redis.set(key, FORMAT)
    finally:
        await redis.delete(f"{key}:lock")
    if done:
        log.info("library: re-embedded %d entries for index format %s", done, FORMAT)
    return done


async def _reembed(library: Library, entry_id: str) -> int:
    row: Any = await library.redis.hmget(library.entry_key(entry_id), ["kind", "payload"])
    kind, payload = row
    if payload is None:
        return 0
    item: AgentSpec | Cohort = (
        Cohort.model_validate_json(payload)
        if kind == "cohort"
        else AgentSpec.model_validate_json(payload)
    )
    await library.embed(
        entry_id, "cohort" if kind == "cohort" else "agent", library.fields_of(item)
    )
    await library.index.delete([entry_id])  # the format-1 vector
    return 1
