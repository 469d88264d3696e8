"""The vector index interface: upsert, query with metadata filters, delete, count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from core.config import Settings
from core.library._settings import library_dir, pinecone_api_key

if TYPE_CHECKING:
    from core.library.embedder import Embedder

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


async def build_index(settings: Settings, embedder: Embedder) -> VectorIndex:
    """The index ``library.backend`` names, sized for ``embedder``."""
    lib = settings.library
    if lib.backend == "pinecone":
        from core.library.pinecone_index import PineconeIndex

        return await PineconeIndex.connect(
            api_key=pinecone_api_key(),
            index_name=lib.pinecone_index,
            namespace=lib.pinecone_namespace,
            host=lib.pinecone_host or None,
        )
    from core.library.local_index import LocalIndex

    return await LocalIndex.open(library_dir(settings), dim=embedder.dim)
