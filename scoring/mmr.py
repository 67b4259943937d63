"""Maximal marginal relevance after strength ranking (seed: "Retrieval applies diversification").

Trades a little redundant similarity for coverage of the candidate pool: the strongest still surface, they just
cannot crowd out everything adjacent. Greedy and deterministic; each step is one vectorised pass over the pool.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def _similarity(vectors: NDArray[np.floating[Any]]) -> F64:
    """Cosine similarity of L2-normalised rows in float64; a row with any NaN (no vector) is 0 to everything."""
    v = np.asarray(vectors, dtype=np.float64)
    missing = np.isnan(v).any(axis=1, keepdims=True)
    v = np.where(missing, 0.0, v)
    sim: F64 = v @ v.T
    return sim


def mmr(scores: F64, vectors: NDArray[np.floating[Any]], k: int, lambda_: float) -> NDArray[np.intp]:
    """Up to ``k`` indices into ``scores``, in selection order.

    First pick is the best score; each next maximises ``lambda_ * norm_score - (1 - lambda_) * max_sim_to_selected``
    with scores scaled to [0, 1] by the maximum. Candidates scoring 0 are only picked once no positive candidate is
    left, so diversity never promotes a memory ranking found worthless. Ties go to the lower index, so
    ``lambda_ = 1`` is exactly a stable top-k by score.
    """
    s = np.asarray(scores, dtype=np.float64)
    n = s.shape[0] if s.ndim == 1 else -1
    if n < 0 or np.ndim(vectors) != 2 or np.shape(vectors)[0] != n:
        raise ValueError(f"scores must be (n,) and vectors (n, d); got {s.shape} and {np.shape(vectors)}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    if not np.all(np.isfinite(s)) or np.any(s < 0.0):
        raise ValueError("scores must be finite and non-negative")
    take = min(k, n)
    if take == 0:
        return np.empty(0, dtype=np.intp)
    if lambda_ == 1.0:
        # No diversity term: a stable sort, so scaling by the maximum cannot merge two close scores into a tie.
        top_k: NDArray[np.intp] = np.argsort(-s, kind="stable")[:take]
        return top_k

    top = s.max()
    norm = s / top if top > 0.0 else np.zeros_like(s)
    relevance = lambda_ * norm
    sim = _similarity(vectors)
    positive = s > 0.0
    available = np.ones(n, dtype=np.bool_)
    chosen = np.empty(take, dtype=np.intp)
    pick = int(np.argmax(s))  # argmax returns the first maximum, i.e. the lowest index
    chosen[0] = pick
    available[pick] = False
    max_sim = sim[:, pick].copy()
    for step in range(1, take):
        # The pool is the positive candidates while any remain, then the zero-score ones.
        remaining_positive = available & positive
        pool = remaining_positive if remaining_positive.any() else available
        objective = relevance - (1.0 - lambda_) * max_sim
        pick = int(np.argmax(np.where(pool, objective, -np.inf)))
        chosen[step] = pick
        available[pick] = False
        np.maximum(max_sim, sim[:, pick], out=max_sim)
    return chosen
