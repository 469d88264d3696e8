"""Building the library the settings describe: its embedder, its index, the library.

Each implementation is imported only when it is the one configured (onnxruntime and the
Pinecone SDK take time and memory to load).
"""

from __future__ import annotations

from typing import Any

from core.config import LibrarySettings, Settings
from core.library._settings import embedding_api_key, library_dir, pinecone_api_key
from core.library.embedder import Embedder
from core.library.index import VectorIndex
from core.library.library import Library
from core.library.upgrade import ensure_format


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


async def open_library(settings: Settings, redis: Any) -> Library:
    """The library the settings describe, on ``redis`` (the caller closes it: aclose);
    entries stored in an older index format are re-embedded first (upgrade.py)."""
    embedder = build_embedder(settings.library)
    index = await build_index(settings, embedder)
    library = Library(
        redis,
        index,
        embedder,
        settings.library,
        key_prefix=settings.redis.key_prefix,
        common_tools=settings.agents.base_tools,
    )
    await ensure_format(library)
    return library
