"""The embedder interface: texts in, unit-length vectors out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.config import LibrarySettings
from core.library._settings import embedding_api_key


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of length ``dim``, L2-normalised (cosine = dot product)."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


def build_embedder(settings: LibrarySettings) -> Embedder:
    """The embedder ``library.embedder`` names; imports only the one that is used."""
    if settings.embedder == "onnx":
        from core.library.onnx_minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if settings.embedder == "litellm":
        from core.library.litellm_embedder import LiteLLMEmbedder

        return LiteLLMEmbedder(
            model=settings.embedding_model,
            dim=settings.embedding_dim,
            api_base=settings.embedding_api_base or None,
            api_key=embedding_api_key(settings),
        )
    from core.library.hashing import HashingEmbedder

    return HashingEmbedder()
