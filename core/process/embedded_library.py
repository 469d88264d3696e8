"""Embedded mode's agent library, kept from one process to the next.

The library keeps its vectors in the index (a folder on disk with the local backend)
and its entries — each spec or cohort, its track record, and the names people saved
them under — in Redis (``keys.library()``; see ``core.library.library``). In
embedded mode that Redis is in the process and dies with it: a name given to a cohort at
the end of one ``caramba run`` was unknown to the next (``--cohort NAME``), and the index
found entries that were gone. So in embedded mode those keys are written to
``records.json`` in the library's folder when the process ends, and loaded when the
next one starts. Like the local index, the folder belongs to one process at a time (the
last to end writes it); several processes share a library through a real Redis.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from core.config import Settings
from core.state.keys import Keys
from core.state.store import Store

log = logging.getLogger(__name__)

RECORDS_FILE = "records.json"


def records_path(settings: Settings) -> Path:
    """Where embedded mode keeps the library's entries: beside its local index."""
    return settings.resolve(settings.library.index_dir) / RECORDS_FILE


def _pattern(settings: Settings) -> str:
    return Keys(settings.redis.key_prefix).library() + ":*"


async def load_library(settings: Settings, store: Store) -> int:
    """Put the saved library keys into the store's Redis; how many keys were loaded."""
    path = records_path(settings)
    try:
        saved: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        log.warning("the library's records in %s are unreadable; starting without them", path)
        return 0
    return await store.restore_keys(saved.get("keys", {}))


async def save_library(settings: Settings, store: Store) -> int:
    """Write the library keys of the store's Redis to the records file (atomically); how
    many (a lock or a claim, which expires, is not kept)."""
    keys = await store.dump_keys(_pattern(settings))
    path = records_path(settings)
    if not keys and not path.exists():
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{RECORDS_FILE}.tmp")
    tmp.write_text(json.dumps({"keys": keys}, ensure_ascii=False), "utf-8")
    os.replace(tmp, path)
    return len(keys)
