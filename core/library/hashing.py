"""A deterministic hashing embedder, for unit tests only.

Each lower-cased word and word bigram is hashed (blake2b) to a bucket and a sign; the
vector is the signed bucket counts, L2-normalised. Texts sharing words score higher than
texts that do not, with no model and no randomness — but it knows nothing of meaning
(a paraphrase with other words scores near zero), so it is not for production.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Signed feature hashing of words and bigrams into ``dim`` buckets."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(text) for text in texts]

    def embed_one(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vector = [0.0] * self._dim
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector
