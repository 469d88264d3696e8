"""The Pinecone adapter on the wire (local HTTP fake), its settings, and a live check."""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from core.config import Settings
from core.errors import MissingSecretError
from core.library import IndexItem, build_index
from core.library._settings import pinecone_api_key
from core.library.hashing import HashingEmbedder
from core.library.onnx_minilm import MiniLMEmbedder
from core.library.pinecone_index import UPSERT_BATCH, PineconeIndex
from tests.conftest import make_settings
from tests.fakes.pinecone_server import FakePinecone

_REAL_GETADDRINFO = socket.getaddrinfo  # captured before the network guard replaces it


def _pinecone_settings(host: str = "") -> Settings:
    return make_settings(
        library={"backend": "pinecone", "pinecone_namespace": "ns1", "pinecone_host": host}
    )


async def test_requests_use_namespace_eq_filters_and_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PINECONE_API_KEY", "test-key")
    embedder = HashingEmbedder(dim=8)
    async with FakePinecone(8) as fake:
        index = await build_index(_pinecone_settings(fake.host), embedder)
        assert isinstance(index, PineconeIndex)
        items = [
            IndexItem(f"id{i}", [1.0] + [0.0] * 7, {"kind": "cohort"})
            for i in range(UPSERT_BATCH + 5)
        ]
        await index.upsert(items)
        await index.query([1.0] + [0.0] * 7, 3, {"kind": "cohort"})
        assert await index.count() == UPSERT_BATCH + 5
        await index.aclose()
    upserts = [body for path, body in fake.requests if path == "/vectors/upsert"]
    assert [len(b["vectors"]) for b in upserts] == [UPSERT_BATCH, 5]
    assert {b["namespace"] for b in upserts} == {"ns1"}
    (query,) = [body for path, body in fake.requests if path == "/query"]
    assert query["filter"] == {"kind": {"$eq": "cohort"}}
    assert query["namespace"] == "ns1" and query["includeMetadata"] is True


async def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PINECONE_API_KEY", raising=False)
    with pytest.raises(MissingSecretError, match="PINECONE_API_KEY") as caught:
        await build_index(_pinecone_settings("http://localhost:1"), HashingEmbedder())
    assert caught.value.variable == "PINECONE_API_KEY"


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("PINECONE_API_KEY"),
    reason="live Pinecone test: set PINECONE_API_KEY (and CARAMBA_LIBRARY__PINECONE_INDEX "
    "for an existing 384-dim cosine index) to run it",
)
async def test_live_pinecone_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _REAL_GETADDRINFO)
    lib = make_settings().library
    index = await PineconeIndex.connect(
        api_key=pinecone_api_key(),
        index_name=lib.pinecone_index,
        namespace=f"caramba-test-{uuid.uuid4().hex[:8]}",
        host=lib.pinecone_host or None,
    )
    try:
        vector = await MiniLMEmbedder().embed(["live check"])
        await index.upsert([IndexItem("live-1", vector[0], {"kind": "agent"})])
        hits = await index.query(vector[0], 1, {"kind": "agent"})
        # Pinecone is eventually consistent: a fresh write may not be visible yet.
        assert hits == [] or hits[0].id == "live-1"
    finally:
        await index.delete(["live-1"])
        await index.aclose()
