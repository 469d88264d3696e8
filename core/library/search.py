"""Ranking a search's candidates: each field's cosine and BM25, fused, then the record.

The candidates are the entries the index returned for any field (the embedding's best
``OVERSAMPLE × k`` per field); the lexical score only re-ranks them, so a search costs
the same with 100 or 100,000 stored entries (the index query aside). Per candidate::

    dense      = combine(cosine per field)         (fields.py: weighted mean or best)
    lexical    = combine(BM25 share per field)     (lexical.py)
    similarity = (1 − lexical_weight) · dense + lexical_weight · lexical
    score      = rank_score(similarity, quality)   (records.py)

A field where an entry was not among the index's hits counts as the lowest cosine
returned for it (an upper bound, so such entries are not buried unfairly). Only the
entries returned are read whole (their spec or cohort parsed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from core.config import LibrarySettings
from core.library.fields import FIELDS, Field, combine
from core.library.lexical import BM25, FieldStats, term_counts
from core.library.lexical_store import load_terms
from core.library.records import LibraryMatch, entry_from_row, rank_score, record_from_row
from core.types import AgentSpec
from core.types.cohort import Cohort

TextsOf = Callable[[AgentSpec | Cohort], Mapping[Field, str]]


@dataclass(frozen=True)
class Query:
    """What a search knows of its text: the index's cosines per entry and field, and the
    text's terms with their statistics (None when lexical_weight is 0)."""

    cosines: Mapping[str, Mapping[Field, float]]
    floor: Mapping[Field, float]
    terms: Collection[str] = ()
    stats: Mapping[Field, FieldStats] | None = None


def fuse(dense: float, lexical: float, settings: LibrarySettings) -> float:
    """The similarity of an entry from its combined cosine and combined BM25 share."""
    weight = settings.lexical_weight
    return (1.0 - weight) * dense + weight * lexical


def rank(
    query: Query,
    rows: Mapping[str, Mapping[str, str]],
    settings: LibrarySettings,
    texts_of: TextsOf,
    limit: int,
) -> list[LibraryMatch]:
    """The best ``limit`` candidates found in ``rows`` (entry id → its Redis hash), best
    score first. ``texts_of`` gives the fields of an entry stored without its terms."""
    scorers = None
    if query.stats is not None:
        scorers = {f: BM25(query.terms, query.stats[f]) for f in FIELDS}
    scored = []
    for entry_id, cosines in query.cosines.items():
        row = rows.get(entry_id)
        if not row:  # the index outlived Redis (embedded mode restarted)
            continue
        dense = {f: cosines.get(f, query.floor[f]) for f in FIELDS}
        lexical: dict[Field, float] = {}
        similarity = combine(dense, settings)
        if scorers is not None:
            stored = load_terms(row.get("terms")) or _counts(entry_id, row, texts_of)
            lexical = {f: scorers[f](stored[f]) for f in FIELDS}
            similarity = fuse(similarity, combine(lexical, settings), settings)
        record = record_from_row(row)
        quality = record.quality(settings.prior_mean, settings.prior_weight)
        score = rank_score(similarity, quality, settings.record_weight)
        scored.append((score, similarity, quality, entry_id, record, dense, lexical))
    scored.sort(key=lambda s: s[0], reverse=True)
    return [
        LibraryMatch(
            entry=entry_from_row(entry_id, rows[entry_id], record),
            similarity=similarity,
            quality=quality,
            score=score,
            fields=dict(dense),
            lexical=dict(lexical),
        )
        for score, similarity, quality, entry_id, record, dense, lexical in scored[:limit]
    ]


def _counts(
    entry_id: str, row: Mapping[str, str], texts_of: TextsOf
) -> dict[Field, dict[str, int]]:
    """The terms of an entry stored before the library kept them (until upgraded)."""
    entry = entry_from_row(entry_id, row)
    item = entry.cohort or entry.agent
    texts = texts_of(item) if item is not None else {}
    return {f: term_counts(texts.get(f, "")) for f in FIELDS}
