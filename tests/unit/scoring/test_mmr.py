"""Maximal marginal relevance: diversity over near-duplicates, missing vectors, ties, and a plain-Python reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from scoring.mmr import mmr

F32 = np.ndarray[Any, np.dtype[np.float32]]
F64 = np.ndarray[Any, np.dtype[np.float64]]
DIM = 8


def unit(*pairs: tuple[int, float]) -> F32:
    v = np.zeros(DIM, dtype=np.float64)
    for axis, value in pairs:
        v[axis] = value
    return (v / np.linalg.norm(v)).astype(np.float32)


NO_VECTOR = np.full(DIM, np.nan, dtype=np.float32)


def pool() -> tuple[F64, F32]:
    """Three near-duplicate strong memories (0, 1, 2) and two distinct weaker ones (3, 4)."""
    vectors = np.stack([
        unit((0, 1.0)),
        unit((0, 1.0), (1, 0.05)),
        unit((0, 1.0), (2, 0.05)),
        unit((3, 1.0)),
        unit((4, 1.0)),
    ])
    return np.array([1.0, 0.95, 0.9, 0.6, 0.5]), vectors


def test_diversity_lets_distinct_memories_through_near_duplicates() -> None:
    scores, vectors = pool()
    assert mmr(scores, vectors, 3, 0.5).tolist() == [0, 3, 4]


def test_lambda_one_is_plain_top_k() -> None:
    scores, vectors = pool()
    assert mmr(scores, vectors, 3, 1.0).tolist() == [0, 1, 2]


def test_selection_follows_the_memories_not_their_positions() -> None:
    scores, vectors = pool()
    perm = np.array([4, 2, 0, 3, 1])
    picked = mmr(scores[perm], vectors[perm], 3, 0.5)
    assert perm[picked].tolist() == [0, 3, 4]


def test_the_strongest_always_comes_first_even_with_no_weight_on_score() -> None:
    scores, vectors = pool()
    assert mmr(scores, vectors, 5, 0.0)[0] == 0


def test_a_memory_without_a_vector_is_unlike_everything() -> None:
    vectors = np.stack([unit((0, 1.0)), unit((0, 1.0), (1, 0.05)), NO_VECTOR, NO_VECTOR])
    scores = np.array([1.0, 0.9, 0.5, 0.5])
    got = mmr(scores, vectors, 4, 0.5)
    assert got.tolist() == [0, 2, 3, 1]  # two vectorless memories are not duplicates of each other either


def test_a_partly_missing_vector_counts_as_missing() -> None:
    partial = unit((0, 1.0))
    partial[1] = np.nan
    vectors = np.stack([unit((0, 1.0)), unit((0, 1.0)), partial])
    assert mmr(np.array([1.0, 0.9, 0.5]), vectors, 2, 0.5).tolist() == [0, 2]


def test_ties_go_to_the_lower_index_every_time() -> None:
    vectors = np.stack([unit((i, 1.0)) for i in range(5)])
    scores = np.full(5, 0.7)
    runs = {tuple(mmr(scores, vectors, 5, lam).tolist()) for lam in (0.0, 0.5, 1.0) for _ in range(3)}
    assert runs == {(0, 1, 2, 3, 4)}
    twins = np.stack([unit((0, 1.0)), unit((1, 1.0)), unit((1, 1.0)), unit((0, 1.0))])
    assert mmr(np.array([0.9, 0.5, 0.5, 0.9]), twins, 4, 0.5).tolist() == [0, 1, 3, 2]


def test_zero_scores_come_only_after_every_positive_one() -> None:
    vectors = np.stack([unit((0, 1.0)), unit((0, 1.0), (1, 0.05)), unit((5, 1.0)), unit((6, -1.0))])
    scores = np.array([1.0, 0.9, 0.0, 0.0])
    assert mmr(scores, vectors, 4, 0.3).tolist() == [0, 1, 2, 3]
    assert mmr(np.zeros(4), vectors, 2, 0.3).tolist() == [0, 2]  # all worthless: still deterministic, still diverse


def test_empty_and_short_pools() -> None:
    scores, vectors = pool()
    empty = mmr(np.empty(0), np.empty((0, DIM), dtype=np.float32), 5, 0.5)
    assert empty.dtype == np.intp
    assert empty.size == 0
    assert mmr(scores, vectors, 0, 0.5).size == 0
    assert sorted(mmr(scores, vectors, 50, 0.5).tolist()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("scores", "vectors", "k", "lambda_"),
    [
        (np.ones(2), np.ones((2, DIM), dtype=np.float32), 2, 1.5),
        (np.ones(2), np.ones((2, DIM), dtype=np.float32), 2, -0.1),
        (np.ones(2), np.ones((2, DIM), dtype=np.float32), -1, 0.5),
        (np.ones(2), np.ones((3, DIM), dtype=np.float32), 2, 0.5),
        (np.ones(2), np.ones(DIM, dtype=np.float32), 2, 0.5),
        (np.array([1.0, -0.1]), np.ones((2, DIM), dtype=np.float32), 2, 0.5),
        (np.array([1.0, np.nan]), np.ones((2, DIM), dtype=np.float32), 2, 0.5),
    ],
)
def test_bad_inputs_raise(scores: F64, vectors: F32, k: int, lambda_: float) -> None:
    with pytest.raises(ValueError):
        mmr(scores, vectors, k, lambda_)


# --- agreement with a plain-Python reference -------------------------------------------------------------------------


def mmr_reference(scores: list[float], vectors: list[list[float]], k: int, lam: float) -> list[int]:
    """The greedy definition written out; candidates are compared one by one."""
    n = len(scores)
    if lam == 1.0:
        return sorted(range(n), key=lambda i: (-scores[i], i))[:k]
    has = [not any(x != x for x in v) for v in vectors]

    def sim(i: int, j: int) -> float:
        return sum(a * b for a, b in zip(vectors[i], vectors[j], strict=True)) if has[i] and has[j] else 0.0

    top = max(scores, default=0.0)
    selected: list[int] = []
    while len(selected) < min(k, n):
        rest = [i for i in range(n) if i not in selected]
        if any(scores[i] > 0 for i in rest):
            rest = [i for i in rest if scores[i] > 0]
        best, best_value = -1, -float("inf")
        for i in rest:
            if not selected:
                value = scores[i]
            else:
                norm = scores[i] / top if top > 0 else 0.0
                value = lam * norm - (1.0 - lam) * max(sim(i, j) for j in selected)
            if value > best_value:
                best, best_value = i, value
        selected.append(best)
    return selected


@st.composite
def pools(draw: st.DrawFn) -> tuple[F64, F32, int, float]:
    """Lattice values (exact dot products in any summation order), duplicates and missing vectors included."""
    n = draw(st.integers(0, 40))
    d = draw(st.integers(1, 6))
    scores = draw(arrays(np.float64, n, elements=st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])))
    vectors = draw(arrays(np.float32, (n, d), elements=st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0])))
    for i in range(n):
        if draw(st.booleans()) and draw(st.booleans()):
            vectors[i] = np.nan
    k = draw(st.integers(0, 45))
    lam = draw(st.sampled_from([0.0, 0.25, 0.5, 0.7, 1.0]))
    return scores, vectors, k, lam


@given(pools())
@settings(max_examples=400, deadline=None)
def test_matches_the_reference(case: tuple[F64, F32, int, float]) -> None:
    scores, vectors, k, lam = case
    got = mmr(scores, vectors, k, lam)
    assert got.tolist() == mmr_reference(scores.tolist(), vectors.astype(np.float64).tolist(), k, lam)


@given(pools())
@settings(max_examples=200, deadline=None)
def test_selection_invariants(case: tuple[F64, F32, int, float]) -> None:
    scores, vectors, k, lam = case
    got = mmr(scores, vectors, k, lam)
    assert got.dtype == np.intp
    assert len(got) == min(k, len(scores))
    assert len(set(got.tolist())) == len(got)
    if len(got):
        assert scores[got[0]] == scores.max()
        positive = scores[got] > 0
        assert not np.any(~positive[:-1] & positive[1:])  # no positive pick after a zero one
