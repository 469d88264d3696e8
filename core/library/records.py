"""What the library keeps per entry, and how entries are ranked.

Ranking formula (all settings under ``[library]``)::

    good    = successes + approvals + rating_sum
    seen    = runs + approvals + rejections + ratings
    quality = (prior_weight · prior_mean + good) / (prior_weight + seen)
    score   = similarity · (1 − record_weight + 2 · record_weight · quality)

``quality`` is the share of good outcomes (successful runs, approvals, ratings scaled to
0..1) shrunk towards ``prior_mean`` by ``prior_weight`` pseudo-observations (a Beta
prior). A new entry has quality = prior_mean (0.5), so with the default ``record_weight``
of 0.5 its score is exactly its similarity: new entries are not buried. Each good outcome
raises the multiplier towards 1.5, each bad one lowers it towards 0.5, so a badly rated
cohort sinks below a less similar one with a good record. One outcome moves quality less
than several do: a single thumbs-down does not bury an entry that ran well ten times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from core.config import LibrarySettings
from core.types import AgentSpec
from core.types._base import Frozen
from core.types.cohort import Cohort

EntryKind = Literal["agent", "cohort"]
_COUNTERS = ("runs", "successes", "approvals", "rejections", "ratings")


class TrackRecord(Frozen):
    """Outcomes of one stored agent or cohort. Counters only ever grow."""

    runs: int = Field(0, ge=0)
    successes: int = Field(0, ge=0)
    approvals: int = Field(0, ge=0)
    rejections: int = Field(0, ge=0)
    ratings: int = Field(0, ge=0)
    # Sum of ratings scaled to 0..1 (thumbs up 1, thumbs down 0, stars (n − 1) / 4).
    rating_sum: float = Field(0.0, ge=0)

    def quality(self, prior_mean: float = 0.5, prior_weight: float = 2.0) -> float:
        """Share of good outcomes, shrunk towards ``prior_mean`` (see the module docstring)."""
        good = self.successes + self.approvals + self.rating_sum
        seen = self.runs + self.approvals + self.rejections + self.ratings
        return (prior_weight * prior_mean + good) / (prior_weight + seen)

    @property
    def mean_rating(self) -> float | None:
        """Mean rating on 0..1, or None before the first one."""
        return self.rating_sum / self.ratings if self.ratings else None

    @property
    def mean_stars(self) -> float | None:
        """Mean rating in stars (1..5; a thumbs up counts 5, down 1), or None before any."""
        mean = self.mean_rating
        return None if mean is None else 1.0 + 4.0 * mean


def rank_score(similarity: float, quality: float, record_weight: float = 0.5) -> float:
    """Similarity weighted by track record (see the module docstring)."""
    return similarity * (1.0 - record_weight + 2.0 * record_weight * quality)


def rated_down(*, thumbs_up: bool | None = None, stars: int | None = None) -> bool:
    """A thumbs down or one or two stars."""
    return thumbs_up is False or (stars is not None and stars <= 2)


def scaled_rating(*, thumbs_up: bool | None = None, stars: int | None = None) -> float:
    """A thumbs (up 1, down 0) or a 1..5 star rating as a number in 0..1."""
    if (thumbs_up is None) == (stars is None):
        raise ValueError("give exactly one of thumbs_up or stars")
    if stars is not None:
        if not 1 <= stars <= 5:
            raise ValueError(f"stars must be 1..5, got {stars}")
        return (stars - 1) / 4
    return 1.0 if thumbs_up else 0.0


class LibraryEntry(Frozen):
    """A stored agent spec or cohort, the text it was embedded from, and its record."""

    id: str
    kind: EntryKind
    name: str | None = None
    text: str
    agent: AgentSpec | None = None
    cohort: Cohort | None = None
    record: TrackRecord = TrackRecord()
    created_at: float = 0.0
    # The run it was first kept from (agents kept from runs), if any.
    source_run: str | None = None


class LibraryMatch(Frozen):
    """An entry found for a query, with how it was ranked."""

    entry: LibraryEntry
    # The fields' cosines and BM25 shares combined and fused (core/library/search.py).
    similarity: float
    quality: float
    score: float
    # Cosine per field (description, prompt, name).
    fields: dict[str, float] = Field(default_factory=dict)
    # BM25 share per field, 0..1 (empty when library.lexical_weight is 0): lexical.py.
    lexical: dict[str, float] = Field(default_factory=dict)


def pick_reusable(matches: list[LibraryMatch], settings: LibrarySettings) -> LibraryMatch | None:
    """The best match if it may be proposed again as is: similar enough
    (``reuse_threshold``), clearly ahead of the runner-up (``reuse_margin``: a near-miss
    close behind means the request may be the other job) and with a good enough record."""
    if not matches:
        return None
    best = matches[0]
    runner_up = max((m.similarity for m in matches[1:]), default=-1.0)
    if (
        best.similarity >= settings.reuse_threshold
        and best.similarity - runner_up >= settings.reuse_margin
        and best.quality >= settings.reuse_min_quality
    ):
        return best
    return None


def record_from_row(row: Mapping[str, str]) -> TrackRecord:
    """An entry's track record from its Redis hash."""
    return TrackRecord(
        **{name: int(row.get(name, 0)) for name in _COUNTERS},
        rating_sum=float(row.get("rating_sum", 0.0)),
    )


def entry_from_row(
    entry_id: str, row: Mapping[str, str], record: TrackRecord | None = None
) -> LibraryEntry:
    """An entry from its Redis hash (``record``: its record, if already read from it)."""
    payload = json.loads(row["payload"])
    kind: EntryKind = "cohort" if row["kind"] == "cohort" else "agent"
    return LibraryEntry(
        id=entry_id,
        kind=kind,
        name=row.get("name"),
        text=row["text"],
        agent=AgentSpec.model_validate(payload) if kind == "agent" else None,
        cohort=Cohort.model_validate(payload) if kind == "cohort" else None,
        record=record or record_from_row(row),
        created_at=float(row.get("created_at", 0.0)),
        source_run=row.get("run"),
    )
