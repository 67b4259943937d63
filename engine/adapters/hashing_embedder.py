"""A deterministic hashing embedder, for unit tests only: no model, stable across runs and machines.

Words are hashed (blake2b, not Python's salted ``hash``) into signed buckets, so texts that share words have
positive cosine similarity. It knows nothing of meaning; never configure it for a real deployment.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

_WORD = re.compile(r"[a-z0-9']+")


class HashingEmbedder:
    def __init__(self, dimension: int = 256) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dimension
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: NDArray[np.float32] = (out / np.maximum(norms, 1e-12)).astype(np.float32)
        return normalised
