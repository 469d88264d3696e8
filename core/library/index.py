"""The vector index interface: upsert, query with metadata filters, delete, count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# Metadata values both backends store and filter on (Pinecone's scalar types).
MetaValue = str | int | float | bool
Metadata = Mapping[str, MetaValue]


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One vector to store under ``id``, with flat metadata."""

    id: str
    vector: Sequence[float]
    metadata: Metadata = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """A query result: cosine similarity ``score`` (higher is closer)."""

    id: str
    score: float
    metadata: Metadata = field(default_factory=dict)


@runtime_checkable
class VectorIndex(Protocol):
    """A cosine-similarity index. ``filter`` keeps items whose metadata equals every pair."""

    async def upsert(self, items: Sequence[IndexItem]) -> None: ...

    async def query(
        self, vector: Sequence[float], top_k: int, filter: Metadata | None = None
    ) -> list[Hit]: ...

    async def delete(self, ids: Sequence[str]) -> None: ...

    async def count(self) -> int: ...

    async def aclose(self) -> None: ...
