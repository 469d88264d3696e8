"""The Pinecone backend (pinecone 10.x SDK, async data plane).

The index must exist already, created with ``dimension`` = the embedder's (384 for the
ONNX MiniLM) and ``metric="cosine"``: Caramba never creates or deletes Pinecone indexes.
All Caramba items go into one namespace (``library.pinecone_namespace``). Metadata filters
are sent as Pinecone ``$eq`` conditions. The API key comes from ``PINECONE_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import ConfigError
from core.library.index import Hit, IndexItem, Metadata

# Pinecone caps one upsert request at 1000 vectors (and 2 MB).
UPSERT_BATCH = 200


class PineconeIndex:
    """A :class:`~core.library.index.VectorIndex` over one namespace of a Pinecone index."""

    def __init__(self, index: Any, namespace: str) -> None:
        self._index = index
        self.namespace = namespace

    @classmethod
    async def connect(
        cls,
        *,
        api_key: str,
        index_name: str,
        namespace: str,
        host: str | None = None,
    ) -> PineconeIndex:
        """Open the data plane of ``index_name``; a known ``host`` skips the lookup."""
        from pinecone import AsyncIndex, AsyncPinecone

        resolved = host
        if not resolved:
            async with AsyncPinecone(api_key=api_key) as control:
                resolved = (await control.indexes.describe(name=index_name)).host
            if not resolved:
                raise ConfigError(
                    f"Pinecone index {index_name!r} has no data-plane host yet",
                    hint="wait until the index is ready, or set library.pinecone_host",
                )
        return cls(AsyncIndex(host=resolved, api_key=api_key), namespace)

    async def upsert(self, items: Sequence[IndexItem]) -> None:
        for start in range(0, len(items), UPSERT_BATCH):
            vectors = [
                {"id": item.id, "values": list(item.vector), "metadata": dict(item.metadata)}
                for item in items[start : start + UPSERT_BATCH]
            ]
            await self._index.upsert(vectors=vectors, namespace=self.namespace)

    async def query(
        self, vector: Sequence[float], top_k: int, filter: Metadata | None = None
    ) -> list[Hit]:
        response = await self._index.query(
            top_k=top_k,
            vector=list(vector),
            namespace=self.namespace,
            filter={key: {"$eq": value} for key, value in filter.items()} if filter else None,
            include_metadata=True,
        )
        return [
            Hit(match.id, float(match.score or 0.0), dict(match.metadata or {}))
            for match in response.matches
        ]

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            await self._index.delete(ids=list(ids), namespace=self.namespace)

    async def count(self) -> int:
        stats = await self._index.describe_index_stats()
        summary = stats.namespaces.get(self.namespace)
        return summary.vector_count if summary is not None else 0

    async def aclose(self) -> None:
        await self._index.close()
