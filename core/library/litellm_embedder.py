"""Embeddings through litellm (any provider, or a local OpenAI-compatible server)."""

from __future__ import annotations

import math
from typing import Any


class LiteLLMEmbedder:
    """``litellm.aembedding`` with the configured model; vectors are L2-normalised here."""

    def __init__(
        self,
        *,
        model: str,
        dim: int,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.model = model
        self._dim = dim
        self._api_base = api_base
        self._api_key = api_key
        self._timeout_s = timeout_s

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import litellm  # imported lazily: ~3 s and ~200 MB

        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "timeout": self._timeout_s}
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        response = await litellm.aembedding(**kwargs)
        rows = sorted(response.data, key=lambda item: _field(item, "index"))
        vectors = [list(map(float, _field(item, "embedding"))) for item in rows]
        for vector in vectors:
            if len(vector) != self._dim:
                raise ValueError(
                    f"{self.model} returned {len(vector)}-dimensional embeddings; "
                    f"library.embedding_dim is {self._dim}"
                )
        return [_normalised(v) for v in vectors]


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def _normalised(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector
