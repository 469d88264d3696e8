"""The lexical statistics in Redis: per kind and field, how many entries hold each term.

One hash per kind and field (``{prefix}:library:lexical:{kind}:{field}``): term → entries
holding it, plus ``#docs`` (entries) and ``#length`` (their terms in all). Saving an entry
adds its terms (``HINCRBY``, atomic: many workers save at once), replacing or deleting
it subtracts the terms it was saved with (kept in its own hash as ``terms``, so the
statistics stay exact whatever changed since). A term whose count fell to 0 stays as 0:
it reads the same as an absent one. (The terms an entry was saved with are read just
before its new ones are counted: two saves of one entry at the same instant could count
one of them twice. Statistics over many entries shrug that off, and bumping
``lexical.VERSION`` recounts them all.) The hashes live beside the entries under the
library's prefix, so embedded mode keeps them in ``records.json`` like the rest, and both
index backends (local, Pinecone) share them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from core.library.fields import FIELDS, Field
from core.library.lexical import FieldStats

# Terms per field, as stored with an entry.
FieldTerms = Mapping[Field, Mapping[str, int]]

_DOCS = "#docs"
_LENGTH = "#length"


class LexicalStore:
    """Reads and updates the term statistics of one library (``prefix``)."""

    def __init__(self, redis: Any, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix

    def key(self, kind: str, field: Field) -> str:
        return f"{self.prefix}:lexical:{kind}:{field}"

    @property
    def version_key(self) -> str:
        return f"{self.prefix}:lexical:version"

    def count(self, pipe: Any, kind: str, terms: FieldTerms, sign: int = 1) -> None:
        """Queue on ``pipe`` adding (sign 1) or removing (−1) one entry's terms."""
        for field, counts in terms.items():
            key = self.key(kind, field)
            pipe.hincrby(key, _DOCS, sign)
            pipe.hincrby(key, _LENGTH, sign * sum(counts.values()))
            for term in counts:
                pipe.hincrby(key, term, sign)

    async def stats(self, kind: str, query: Collection[str]) -> dict[Field, FieldStats]:
        """Each field's statistics for the query's terms (one round trip)."""
        wanted = [_DOCS, _LENGTH, *dict.fromkeys(query)]
        async with self.redis.pipeline(transaction=False) as pipe:
            for field in FIELDS:
                pipe.hmget(self.key(kind, field), wanted)
            rows = await pipe.execute()
        result: dict[Field, FieldStats] = {}
        for field, row in zip(FIELDS, rows, strict=True):
            values = [max(int(v or 0), 0) for v in row]
            result[field] = FieldStats(
                docs=values[0], length=values[1], df=dict(zip(wanted[2:], values[2:], strict=True))
            )
        return result

    async def clear(self) -> None:
        """Forget every statistic (before rebuilding them)."""
        await self.redis.delete(*(self.key(k, f) for k in ("agent", "cohort") for f in FIELDS))


def dump_terms(terms: FieldTerms) -> str:
    """An entry's terms as kept in its hash."""
    return json.dumps(terms, separators=(",", ":"))


def load_terms(raw: str | None) -> dict[Field, dict[str, int]] | None:
    """An entry's terms from its hash (None: saved before the lexical scoring)."""
    if not raw:
        return None
    data = json.loads(raw)
    return {f: dict(data.get(f, {})) for f in FIELDS}
