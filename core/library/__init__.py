"""The agent library (RAG): agents and cohorts kept for reuse on similar tasks.

Interfaces: :class:`Embedder` (``onnx_minilm``, ``litellm_embedder``, ``hashing``) and
:class:`VectorIndex` (``local_index``, ``pinecone_index``); :class:`Library` stores
entries and their track records and ranks them: the fields' cosines fused with BM25
(``search.py``, ``lexical.py``), weighted by record (``records.py``).
"""

from core.library.embedder import Embedder
from core.library.factories import build_embedder, build_index, open_library
from core.library.index import Hit, IndexItem, VectorIndex
from core.library.library import EntryNotFoundError, Library, NameTakenError
from core.library.records import LibraryEntry, LibraryMatch, TrackRecord, rank_score

__all__ = [
    "Embedder",
    "EntryNotFoundError",
    "Hit",
    "IndexItem",
    "Library",
    "LibraryEntry",
    "LibraryMatch",
    "NameTakenError",
    "TrackRecord",
    "VectorIndex",
    "build_embedder",
    "build_index",
    "open_library",
    "rank_score",
]
