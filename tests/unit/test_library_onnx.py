"""The default ONNX MiniLM embedder: meaning, not words, and the paraphrase set."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from core.config import LibrarySettings
from core.library import build_embedder
from core.library.onnx_minilm import DIM, TOKENIZER_PATH, MiniLMEmbedder

PARAPHRASES = Path(__file__).parents[1] / "data" / "paraphrases.toml"


def load_pairs() -> list[tuple[str, str]]:
    pairs = tomllib.loads(PARAPHRASES.read_text())["pairs"]
    return [(task, para) for task, para in pairs]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_tokenizer_ships_inside_the_package() -> None:
    assert TOKENIZER_PATH.is_file()
    assert TOKENIZER_PATH.parent.name == "minilm"
    assert isinstance(build_embedder(LibrarySettings(embedder="onnx")), MiniLMEmbedder)


async def test_paraphrases_score_higher_than_unrelated_pairs(embedder: MiniLMEmbedder) -> None:
    texts = [
        "Summarise the quarterly sales report for the leadership team",
        "Write a short summary of this quarter's sales figures for the executives",
        "Plan a three-day trip to Lisbon on a budget",
        "Put together a cheap itinerary for a long weekend in Lisbon",
    ]
    v = np.array(await embedder.embed(texts))
    assert v.shape == (4, DIM)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sim = v @ v.T
    assert min(sim[0, 1], sim[2, 3]) > 0.6
    assert max(sim[0, 2], sim[0, 3], sim[1, 2], sim[1, 3]) < 0.3
    assert await embedder.embed([]) == []


async def test_top1_on_the_paraphrase_set(embedder: MiniLMEmbedder) -> None:
    pairs = load_pairs()
    assert len(pairs) >= 50
    tasks = np.array(await embedder.embed([t for t, _ in pairs]))
    queries = np.array(await embedder.embed([p for _, p in pairs]))
    top1 = float(np.mean((queries @ tasks.T).argmax(axis=1) == np.arange(len(pairs))))
    assert top1 >= 0.9


async def test_batches_give_the_same_vectors_as_single_texts(embedder: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence that needs more tokens than the first one"]
    together = np.array(await embedder.embed(texts))
    alone = np.array([(await embedder.embed([t]))[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
