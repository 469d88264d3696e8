"""The lexical statistics in Redis: per kind and field, how many entries hold each term.

One hash per kind and field (``keys.library_lexical``): term → entries
holding it, plus ``#docs`` (entries) and ``#length`` (their terms in all). Saving an entry
adds its terms (``HINCRBY``, atomic: many workers save at once), replacing or deleting
it subtracts the terms it was saved with (kept in its own hash as ``terms``, so the
statistics stay exact whatever changed since). A term whose count fell to 0 stays as 0:
it reads the same as an absent one. (The terms an entry was saved with are read just
before its new ones are counted: two saves of one entry at the same instant could count
one of them twice. Statistics over many entries shrug that off, and bumping
``lexical.VERSION`` recounts them all.) The hashes live beside the entries under the
library's prefix, so embedded mode keeps them in ``records.json`` like the rest, and both
index backends (local, Pinecone) share them. The hashes are written and read by the state
room (``core.state.library_store``); here they are turned into statistics.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

from core.library.fields import FIELDS, Field
from core.library.lexical import FieldStats
from core.state.library_store import DOCS, LENGTH, LibraryStore

# Terms per field, as stored with an entry.
FieldTerms = Mapping[Field, Mapping[str, int]]


class LexicalStore:
    """Reads the term statistics of one library (its entries' saves count them)."""

    def __init__(self, store: LibraryStore) -> None:
        self.store = store

    def key(self, kind: str, field: Field) -> str:
        return self.store.keys.library_lexical(kind, field)

    @property
    def version_key(self) -> str:
        return self.store.keys.library_lexical_version()

    async def stats(self, kind: str, query: Collection[str]) -> dict[Field, FieldStats]:
        """Each field's statistics for the query's terms (one round trip)."""
        wanted = [DOCS, LENGTH, *dict.fromkeys(query)]
        rows = await self.store.term_rows(kind, wanted)
        result: dict[Field, FieldStats] = {}
        for field, row in zip(FIELDS, rows, strict=True):
            values = [max(int(v or 0), 0) for v in row]
            result[field] = FieldStats(
                docs=values[0], length=values[1], df=dict(zip(wanted[2:], values[2:], strict=True))
            )
        return result

    async def clear(self) -> None:
        """Forget every statistic (before rebuilding them)."""
        await self.store.clear_terms(("agent", "cohort"))


def dump_terms(terms: FieldTerms) -> str:
    """An entry's terms as kept in its hash."""
    return json.dumps(terms, separators=(",", ":"))


def load_terms(raw: str | None) -> dict[Field, dict[str, int]] | None:
    """An entry's terms from its hash (None: saved before the lexical scoring)."""
    if not raw:
        return None
    data = json.loads(raw)
    return {f: dict(data.get(f, {})) for f in FIELDS}
