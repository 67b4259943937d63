"""Stage one's scoring, one function for every store (seed 000, "Two legs, one ranked list").

A store returns raw leg material for a pool of memories: each one's cosine with the query vector and, for each
query term, its term frequency, with the document lengths and the partition's document frequencies. Everything
after that happens here, in plain numpy, the same for the embedded store and for Weaviate:

1. **BM25** with the profile's ``k1`` and ``b`` and a weight per query term (the message's words weigh 1, words
   only the conversation window says weigh less), normalised by the query's weighted idf mass: 1 means every
   weighted query term matched once in a document of average length.
2. **The vector threshold adapts.** A hit clears it at ``min_similarity`` or within ``relative_margin`` of the
   query's best cosine, whichever is lower; so when every match is weak, the best of them still enter.
3. **Fusion.** The cosine is normalised linearly from 0, ``zero_margin`` below the query's threshold (a hit
   right at the threshold still counts a little), to 1 at ``full_similarity``; the two legs are weighted. A
   memory the vector leg did not find at the absolute threshold (``min_similarity``) has its lexical share
   capped at ``lexical_only_cap``: repeating the right words is never enough to win, whatever the relative
   threshold let in.
4. **The fused floor is relative**: a hit stays at ``relative_floor`` times the query's best fused relevance,
   and at ``fused_floor`` unless the best itself is below it (then the best and its near ties stay). A strong
   match is not padded with noise, and a partition where every match is weak still returns its best few.
5. **Tiers** on a calibrated relevance: the probability that a memory is one a good companion would bring up,
   ``1 / (1 + exp(-(a + b * fused + c * lead)))``, where ``lead`` is how far its fused relevance stands above the
   median of the query's best ``candidates`` hits (a weak match that stands out from the rest is worth more than
   one among equals). ``a``, ``b`` and ``c`` are fitted on the development set (``feltsense eval window
   --calibrate``); high at ``tier_high`` and above, low below ``tier_low``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
Mask = NDArray[np.bool_]
TIER_LOW, TIER_STANDARD, TIER_HIGH = 0, 1, 2


def normalise_similarity(cosine: F64, *, min_similarity: float, full_similarity: float) -> F64:
    """Cosine mapped linearly to [0, 1]: 0 at ``min_similarity``, 1 at ``full_similarity`` and above."""
    return np.clip((cosine - min_similarity) / (full_similarity - min_similarity), 0.0, 1.0)


def bm25(
    term_frequency: F64, doc_length: F64, *, idf: float | F64, average_doc_length: float, k1: float, b: float
) -> F64:
    """A query term's BM25 contribution to each document: one term over its postings list, or, broadcast, a
    documents x terms matrix (``doc_length`` a column, ``idf`` one per term). A document without the term gets 0."""
    norm = k1 * (1.0 - b + b * doc_length / max(average_doc_length, 1e-9))
    saturated = np.divide(term_frequency * (k1 + 1.0), term_frequency + norm,
                          out=np.zeros(np.broadcast(term_frequency, norm).shape), where=term_frequency > 0)
    return np.asarray(idf * saturated, dtype=np.float64)


def bm25_idf(document_frequency: F64, documents: int) -> F64:
    """The non-negative BM25 idf (Lucene's variant)."""
    return np.log1p((documents - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25_normalised(
    term_frequency: F64,
    doc_length: F64,
    document_frequency: F64,
    term_weights: F64,
    *,
    documents: int,
    average_doc_length: float,
    k1: float,
    b: float,
) -> F64:
    """Weighted BM25 of a pool (rows) over the query's terms (columns), divided by the weighted idf mass.

    A term no memory has counts as if one memory had it: otherwise one unknown word in a chatty message would
    outweigh every word that did match. The result is clipped to [0, 1].
    """
    if term_frequency.shape[1] == 0 or len(term_frequency) == 0:
        return np.zeros(len(term_frequency))
    idf = bm25_idf(np.maximum(document_frequency, 1.0), max(documents, 1))
    mass = float(idf @ term_weights)
    if mass <= 0.0:
        return np.zeros(len(term_frequency))
    per_term = bm25(term_frequency, doc_length[:, None], idf=idf, average_doc_length=average_doc_length, k1=k1, b=b)
    return np.clip((per_term @ term_weights) / mass, 0.0, 1.0)


@dataclass(frozen=True)
class StageOneParams:
    candidates: int
    min_similarity: float
    zero_margin: float
    full_similarity: float
    relative_margin: float
    vector_weight: float
    lexical_weight: float
    lexical_only_cap: float
    fused_floor: float
    relative_floor: float
    tier_high: float
    tier_low: float
    calibration: tuple[float, float, float] = (0.0, 1.0, 0.0)  # intercept, fused weight, lead weight


@dataclass(frozen=True)
class StageOne:
    """The pool's ranking: ``rows`` are indices into the pool, best first (ties by pool order)."""

    rows: NDArray[np.int64]
    relevance: F64  # per pool row
    lexical: F64  # per pool row, normalised BM25
    vector_hit: Mask
    lexical_hit: Mask
    calibrated: F64  # per pool row: the probability the tier is read from
    lead: F64  # per pool row: fused relevance minus the median of the best ``candidates`` hits
    tier: NDArray[np.int8]  # per pool row: TIER_LOW, TIER_STANDARD or TIER_HIGH
    vector_threshold: float
    fused_floor: float
    dropped_below_floor: int


def stage_one(cosine: F64, lexical: F64, allowed: Mask, params: StageOneParams, *, have_vector: bool) -> StageOne:
    """Rank a pool by fused relevance. ``cosine`` is NaN where a memory has no vector (or the vector leg did not
    score it); ``lexical`` is ``bm25_normalised``; ``allowed`` is what this recall may see.

    Without a query vector (the embedder is down) the lexical leg answers alone and uncapped: capping it would
    only hide the best lexical matches there are.
    """
    has_cosine = allowed & ~np.isnan(cosine)
    safe = np.where(has_cosine, cosine, -np.inf)
    best = float(safe.max()) if have_vector and has_cosine.any() else -np.inf
    threshold = min(params.min_similarity, best - params.relative_margin)
    vector_hit = has_cosine & (safe >= threshold) if have_vector else np.zeros(len(cosine), dtype=bool)
    strong = vector_hit & (safe >= params.min_similarity)
    lexical_hit = allowed & (lexical > 0.0)
    if have_vector:
        zero = min(threshold - params.zero_margin, params.full_similarity - 1e-6)
        vector = normalise_similarity(np.where(vector_hit, safe, zero), min_similarity=zero,
                                      full_similarity=params.full_similarity)
        lexical_part = params.lexical_weight * np.where(lexical_hit, lexical, 0.0)
        lexical_part = np.where(strong, lexical_part, np.minimum(lexical_part, params.lexical_only_cap))
        fused = params.vector_weight * vector + lexical_part
    else:
        fused = np.where(lexical_hit, lexical, 0.0)
    fused = np.clip(fused, 0.0, 1.0)
    hits = vector_hit | lexical_hit
    top = float(fused[hits].max()) if hits.any() else 0.0
    floor = max(params.relative_floor * top, min(params.fused_floor, top))
    keep = hits & (fused >= floor) & (fused > 0.0)
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(-fused[rows], kind="stable")][: params.candidates]
    lead = lead_over_median(fused, hits, params.candidates)
    calibrated = calibrate(fused, lead, params)
    tier = np.where(calibrated >= params.tier_high, TIER_HIGH,
                    np.where(calibrated < params.tier_low, TIER_LOW, TIER_STANDARD))
    return StageOne(
        rows=rows.astype(np.int64), relevance=fused, lexical=lexical, vector_hit=vector_hit, lexical_hit=lexical_hit,
        calibrated=calibrated, lead=lead, tier=tier.astype(np.int8),
        vector_threshold=threshold if have_vector else float("nan"), fused_floor=floor,
        dropped_below_floor=int(np.count_nonzero(hits & ~keep)),
    )



def lead_over_median(fused: F64, hits: Mask, candidates: int) -> F64:
    """How far each fused relevance stands above the median of the best ``candidates`` hits (0 when none)."""
    if not hits.any():
        return np.zeros(len(fused))
    best = np.sort(fused[hits])[::-1][:candidates]
    return np.asarray(fused - float(np.median(best)), dtype=np.float64)


def calibrate(fused: F64, lead: F64, params: StageOneParams) -> F64:
    """The calibrated relevance (module docstring, step 5)."""
    intercept, fused_weight, lead_weight = params.calibration
    z = intercept + fused_weight * fused + lead_weight * lead
    return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)
