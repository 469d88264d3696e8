"""Embedders: the hashing one (tests only), the litellm one against the LLM HTTP fake."""

from __future__ import annotations

import math

import pytest

from core.config import LibrarySettings
from core.errors import MissingSecretError
from core.library import Embedder, build_embedder
from core.library.hashing import HashingEmbedder
from core.library.litellm_embedder import LiteLLMEmbedder
from tests.fakes.llm_server import FakeLLMServer, fake_embedding


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_hashing_is_deterministic_unit_length_and_sized() -> None:
    embedder = HashingEmbedder(dim=128)
    first, again = (
        await embedder.embed(["Plan a trip to Lisbon"]),
        await HashingEmbedder(dim=128).embed(["Plan a trip to Lisbon"]),
    )
    assert first == again
    assert len(first[0]) == embedder.dim == 128
    assert math.isclose(math.sqrt(_dot(first[0], first[0])), 1.0)
    assert isinstance(embedder, Embedder)


async def test_hashing_scores_shared_words_above_unrelated_text() -> None:
    query, near, far = await HashingEmbedder().embed(
        [
            "summarise the quarterly sales report",
            "summarise the sales report for the quarter",
            "bake a chocolate cake for a birthday",
        ]
    )
    assert _dot(query, near) > 0.5 > _dot(query, far)


async def test_hashing_handles_empty_text_and_empty_batch() -> None:
    embedder = HashingEmbedder(dim=16)
    assert await embedder.embed([]) == []
    assert await embedder.embed([""]) == [[0.0] * 16]
    with pytest.raises(ValueError):
        HashingEmbedder(dim=4)


async def test_litellm_embedder_through_the_http_fake() -> None:
    async with FakeLLMServer(embedding_dim=32) as server:
        embedder = LiteLLMEmbedder(
            model="openai/fake-embedding", dim=32, api_base=server.base_url, api_key="x"
        )
        vectors = await embedder.embed(["review this contract", "plan a party"])
        assert await embedder.embed([]) == []
    assert len(vectors) == 2 and all(len(v) == 32 for v in vectors)
    for vector, text in zip(vectors, ["review this contract", "plan a party"], strict=True):
        assert _dot(vector, fake_embedding(text, 32)) == pytest.approx(1.0, abs=1e-5)
    assert server.requests[0]["model"] == "fake-embedding"
    assert server.requests[0]["input"] == ["review this contract", "plan a party"]


async def test_litellm_embedder_refuses_a_dimension_other_than_configured() -> None:
    async with FakeLLMServer(embedding_dim=8) as server:
        embedder = LiteLLMEmbedder(
            model="openai/fake-embedding", dim=16, api_base=server.base_url, api_key="x"
        )
        with pytest.raises(ValueError, match="embedding_dim is 16"):
            await embedder.embed(["hello"])


def test_build_embedder_picks_the_configured_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(build_embedder(LibrarySettings(embedder="hashing")), HashingEmbedder)
    litellm = build_embedder(LibrarySettings(embedder="litellm", embedding_dim=8))
    assert isinstance(litellm, LiteLLMEmbedder) and litellm.dim == 8
    monkeypatch.delenv("MY_EMBED_KEY", raising=False)
    with pytest.raises(MissingSecretError, match="MY_EMBED_KEY"):
        build_embedder(LibrarySettings(embedder="litellm", embedding_api_key_env="MY_EMBED_KEY"))
