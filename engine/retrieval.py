"""Stage one with the tuning profile's constants, the same for every store: the query the two legs search with
(the message first, the conversation window as weighted context) and the one ranking of what they return.

The query vector is ``e(message) + w * e(window)``, where ``e(window)`` is the unit mean of the window's lines
weighted by recency (``window_recency`` per line back). A cosine with that vector, rescaled by
``|q| / (1 + w)``, is exactly the weighted mean ``(cos(message) + w * cos(window)) / (1 + w)``: one vector
search on either backend, and a score on the same scale as a single message's cosine.

The lexical query is the message's terms at weight 1 and the window's other terms at ``window_lexical_weight``
times their line's recency weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import Candidate, Leg, Tier
from engine.domain.ports import LegScores
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams
from scoring.fusion import TIER_HIGH, TIER_LOW, TIER_STANDARD, StageOneParams, bm25_normalised, stage_one

TIERS: dict[int, Tier] = {TIER_LOW: "low", TIER_STANDARD: "standard", TIER_HIGH: "high"}


@dataclass(frozen=True)
class Query:
    """What both legs search with for one recall."""

    vector: NDArray[np.float32] | None  # unit length; None when the embedder is down
    cosine_scale: float  # |q| / (1 + w): turns a cosine with ``vector`` into the weighted mean of cosines
    terms: list[str]
    term_weights: NDArray[np.float64]


def window_weights(lines: int, recency: float) -> NDArray[np.float64]:
    """Each line's weight, oldest first: the newest weighs 1, each older one ``recency`` times the next."""
    return np.asarray(recency ** np.arange(lines - 1, -1, -1, dtype=np.float64))


def lexical_query(
    message: str, window: Sequence[str], params: RetrievalParams
) -> tuple[list[str], NDArray[np.float64]]:
    """Distinct query terms with their weights: the message's at 1, the window's other terms at the window's weight
    times the recency of the newest line that says them."""
    return weighted_terms(terms(message), [terms(line) for line in window], params)


def weighted_terms(
    message: Sequence[str], window: Sequence[Sequence[str]], params: RetrievalParams
) -> tuple[list[str], NDArray[np.float64]]:
    """``lexical_query`` over text already split into index terms (``window``: one list per line, oldest first)."""
    weighted: dict[str, float] = dict.fromkeys(message, 1.0)
    if params.window_lexical_weight > 0.0 and window:
        recency = window_weights(len(window), params.window_recency)
        for line, weight in zip(window, recency, strict=True):
            for term in line:
                weighted[term] = max(weighted.get(term, 0.0), params.window_lexical_weight * float(weight))
    return list(weighted), np.array(list(weighted.values()), dtype=np.float64)


def query_vector(
    message_vector: NDArray[np.float32] | None, window_vectors: NDArray[np.float32] | None, params: RetrievalParams
) -> tuple[NDArray[np.float32] | None, float]:
    """The unit query vector and its cosine scale (see the module docstring)."""
    if message_vector is None:
        return None, 1.0
    message = message_vector.astype(np.float64)
    weight = params.window_vector_weight
    if window_vectors is None or len(window_vectors) == 0 or weight == 0.0:
        norm = float(np.linalg.norm(message)) or 1.0
        return (message / norm).astype(np.float32), 1.0
    rows = np.asarray(window_vectors, dtype=np.float64)
    finite = ~np.isnan(rows).any(axis=1)
    if not finite.any():
        return query_vector(message_vector, None, params)
    recency = window_weights(len(rows), params.window_recency)[finite]
    mean = recency @ rows[finite]
    mean /= float(np.linalg.norm(mean)) or 1.0
    combined = message + weight * mean
    norm = float(np.linalg.norm(combined)) or 1.0
    return (combined / norm).astype(np.float32), norm / (1.0 + weight)


def stage_one_params(params: RetrievalParams) -> StageOneParams:
    return StageOneParams(
        candidates=params.candidates, min_similarity=params.vector_min_similarity,
        zero_margin=params.vector_zero_margin, full_similarity=params.vector_full_similarity,
        relative_margin=params.vector_relative_margin, vector_weight=params.vector_weight,
        lexical_weight=params.lexical_weight, lexical_only_cap=params.lexical_only_cap,
        fused_floor=params.fused_floor, relative_floor=params.fused_relative_floor,
        tier_high=params.tier_high, tier_low=params.tier_low,
        calibration=(params.tier_intercept, params.tier_fused_weight, params.tier_lead_weight),
    )


@dataclass(frozen=True)
class Ranked:
    """One store level's stage one: candidates best first and what the recall trace reports about them."""

    candidates: list[Candidate]
    vector: int
    lexical: int
    dropped_below_floor: int
    excluded_current_session: int
    vector_threshold: float | None
    fused_floor: float | None


def rank(legs: LegScores, query: Query, params: RetrievalParams) -> Ranked:
    """The one stage-one ranking of a store's pool (``scoring.fusion.stage_one``)."""
    n = len(legs.memory_ids)
    if n == 0:
        return Ranked([], 0, 0, 0, legs.excluded_current_session, None, None)
    cosine = legs.cosine * query.cosine_scale
    lexical = bm25_normalised(
        legs.term_frequency, legs.doc_length, legs.document_frequency, query.term_weights,
        documents=legs.documents, average_doc_length=legs.average_doc_length, k1=params.bm25_k1, b=params.bm25_b,
    )
    have_vector = query.vector is not None
    found = stage_one(cosine, lexical, np.ones(n, dtype=bool), stage_one_params(params), have_vector=have_vector)
    candidates = []
    for row in found.rows.tolist():
        legs_hit = tuple(leg for leg, hit in ((Leg.VECTOR, found.vector_hit[row]),
                                              (Leg.LEXICAL, found.lexical_hit[row])) if hit)
        candidates.append(Candidate(
            memory_id=legs.memory_ids[row],
            relevance=float(found.relevance[row]),
            vector_score=float(cosine[row]) if found.vector_hit[row] else None,
            lexical_score=float(lexical[row]) if found.lexical_hit[row] else None,
            legs=legs_hit,
            tier=TIERS[int(found.tier[row])],
            calibrated_relevance=float(found.calibrated[row]),
            relevance_lead=float(found.lead[row]),
        ))
    return Ranked(
        candidates=candidates,
        vector=int(np.count_nonzero(found.vector_hit)),
        lexical=int(np.count_nonzero(found.lexical_hit)),
        dropped_below_floor=found.dropped_below_floor,
        excluded_current_session=legs.excluded_current_session,
        vector_threshold=found.vector_threshold if have_vector else None,
        fused_floor=found.fused_floor,
    )
