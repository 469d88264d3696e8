"""The embedder interface: texts in, unit-length vectors out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of length ``dim``, L2-normalised (cosine = dot product)."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...
