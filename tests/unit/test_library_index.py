"""Vector indexes: one contract for the local index and the Pinecone adapter (HTTP fake)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from core.errors import ConfigError
from core.library import IndexItem, VectorIndex
from core.library.local_index import LocalIndex
from core.library.pinecone_index import PineconeIndex
from tests.fakes.pinecone_server import FakePinecone

DIM = 4


@pytest.fixture(params=["local", "pinecone"])
async def index(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorIndex]:
    if request.param == "local":
        local = await LocalIndex.open(tmp_path / "idx", dim=DIM)
        yield local
        await local.aclose()
        return
    from pinecone import AsyncIndex

    async with FakePinecone(DIM) as fake:
        remote = PineconeIndex(AsyncIndex(host=fake.host, api_key="test"), "caramba-test")
        yield remote
        await remote.aclose()


ITEMS = [
    IndexItem("a", [1.0, 0.0, 0.0, 0.0], {"kind": "agent", "team": "x"}),
    IndexItem("b", [0.9, 0.1, 0.0, 0.0], {"kind": "cohort", "team": "x"}),
    IndexItem("c", [0.0, 1.0, 0.0, 0.0], {"kind": "cohort", "team": "y"}),
]


async def test_upsert_query_ranks_by_cosine(index: VectorIndex) -> None:
    await index.upsert(ITEMS)
    assert await index.count() == 3
    hits = await index.query([2.0, 0.0, 0.0, 0.0], top_k=2)
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].metadata == {"kind": "agent", "team": "x"}


async def test_metadata_filters_are_equalities(index: VectorIndex) -> None:
    await index.upsert(ITEMS)
    hits = await index.query([1.0, 0.0, 0.0, 0.0], top_k=5, filter={"kind": "cohort"})
    assert [h.id for h in hits] == ["b", "c"]
    both = await index.query([0.0, 1.0, 0.0, 0.0], 5, {"kind": "cohort", "team": "y"})
    assert [h.id for h in both] == ["c"]
    assert await index.query([1.0, 0.0, 0.0, 0.0], 5, {"kind": "judge"}) == []


async def test_upsert_replaces_and_delete_removes(index: VectorIndex) -> None:
    await index.upsert(ITEMS)
    await index.upsert([IndexItem("a", [0.0, 0.0, 1.0, 0.0], {"kind": "cohort"})])
    assert await index.count() == 3
    assert (await index.query([0.0, 0.0, 1.0, 0.0], 1, {"kind": "cohort"}))[0].id == "a"
    assert await index.query([1.0, 0.0, 0.0, 0.0], 5, {"kind": "agent"}) == []
    await index.delete(["a", "missing"])
    assert await index.count() == 2
    assert {h.id for h in await index.query([0.0, 0.0, 1.0, 0.0], 5)} == {"b", "c"}


async def test_local_index_persists_and_reloads(tmp_path: Path) -> None:
    index = await LocalIndex.open(tmp_path, dim=DIM)
    await index.upsert(ITEMS)
    await index.delete(["a"])
    reloaded = await LocalIndex.open(tmp_path, dim=DIM)
    assert await reloaded.count() == 2
    hits = await reloaded.query([1.0, 0.0, 0.0, 0.0], 5, {"team": "x"})
    assert [(h.id, h.metadata["kind"]) for h in hits] == [("b", "cohort")]
    # The moved row (c took a's place) kept its identity across the reload.
    assert (await reloaded.query([0.0, 1.0, 0.0, 0.0], 1))[0].id == "c"


async def test_local_index_without_autosave_writes_on_flush(tmp_path: Path) -> None:
    index = await LocalIndex.open(tmp_path, dim=DIM, autosave=False)
    await index.upsert(ITEMS)
    assert await (await LocalIndex.open(tmp_path, dim=DIM)).count() == 0
    await index.flush()
    assert await (await LocalIndex.open(tmp_path, dim=DIM)).count() == 3


async def test_local_index_refuses_another_dimension(tmp_path: Path) -> None:
    index = await LocalIndex.open(tmp_path, dim=DIM)
    await index.upsert(ITEMS)
    with pytest.raises(ConfigError, match="4-dim"):
        await LocalIndex.open(tmp_path, dim=8)
    with pytest.raises(ValueError, match="4 dims"):
        await index.upsert([IndexItem("z", [1.0, 2.0])])


async def test_local_index_matches_brute_force_at_scale() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3000, DIM * 8)).astype(np.float32)
    index = LocalIndex(DIM * 8)
    await index.upsert(
        [
            IndexItem(f"v{i}", v, {"odd": bool(i % 2), "bucket": i % 10})
            for i, v in enumerate(vectors)
        ]
    )
    await index.delete([f"v{i}" for i in range(0, 3000, 7)])
    query = rng.normal(size=DIM * 8)
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ranked = [i for i in np.argsort(-(normed @ query)) if i % 7]

    async def ids(flt: dict[str, bool | int] | None) -> list[int]:
        return [int(h.id[1:]) for h in await index.query(query.tolist(), 10, flt)]

    assert await ids(None) == ranked[:10]
    assert await ids({"odd": True}) == [i for i in ranked if i % 2][:10]  # broad: masked
    assert await ids({"bucket": 1}) == [i for i in ranked if i % 10 == 1][:10]  # selective
    assert await ids({"bucket": True}) == []  # True is not 1 in metadata


async def test_processes_sharing_a_folder_save_at_once(tmp_path: Path) -> None:
    """Before: every save wrote the same temporary file names, so two workers saving into
    one folder at once made one's rename fail (FileNotFoundError, seen under bench/chaos)."""
    first = await LocalIndex.open(tmp_path, 4, autosave=False)
    second = await LocalIndex.open(tmp_path, 4, autosave=False)
    await first.upsert([IndexItem("a", [1.0, 0.0, 0.0, 0.0], {"kind": "agent"})])
    await second.upsert([IndexItem("b", [0.0, 1.0, 0.0, 0.0], {"kind": "agent"})])
    for _ in range(30):
        await asyncio.gather(first.flush(), second.flush())
    reopened = await LocalIndex.open(tmp_path, 4)
    assert await reopened.count() == 1  # one of the two, whole
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
