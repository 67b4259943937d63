"""Stage one's fusion of a vector leg and a lexical leg into one relevance in [0, 1] (seed 000, "Two legs")."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def normalise_similarity(cosine: F64, *, min_similarity: float, full_similarity: float) -> F64:
    """Cosine mapped linearly to [0, 1]: 0 at the vector threshold, 1 at ``full_similarity`` and above."""
    return np.clip((cosine - min_similarity) / (full_similarity - min_similarity), 0.0, 1.0)


def bm25(
    term_frequency: F64, doc_length: F64, *, idf: float, average_doc_length: float, k1: float, b: float
) -> F64:
    """One query term's BM25 contribution to the documents in its postings list."""
    norm = k1 * (1.0 - b + b * doc_length / max(average_doc_length, 1e-9))
    return idf * term_frequency * (k1 + 1.0) / (term_frequency + norm)


def bm25_idf(document_frequency: F64, documents: int) -> F64:
    """The non-negative BM25 idf (Lucene's variant)."""
    return np.log1p((documents - document_frequency + 0.5) / (document_frequency + 0.5))


def fuse(
    vector: F64,
    lexical: F64,
    vector_hit: NDArray[np.bool_],
    lexical_hit: NDArray[np.bool_],
    *,
    vector_weight: float,
    lexical_weight: float,
    lexical_only_cap: float,
    fused_floor: float,
) -> tuple[F64, NDArray[np.bool_]]:
    """Weighted fusion of normalised leg scores; returns relevance and which candidates clear the floor.

    A hit that only the lexical leg found is capped, so repeating the right words is not enough to win; a hit
    that clears neither the vector threshold (``vector_hit``) nor the fused floor is gone.
    """
    fused = vector_weight * np.where(vector_hit, vector, 0.0) + lexical_weight * np.where(lexical_hit, lexical, 0.0)
    fused = np.where(vector_hit, fused, np.minimum(fused, lexical_only_cap))
    keep = (vector_hit | lexical_hit) & (fused >= fused_floor)
    return np.clip(fused, 0.0, 1.0), keep
