"""A plain-Python reference of stage two, for differential tests and the benchmark's baseline.

It must rank exactly as ``scoring.rerank.stage_two``; it is deliberately written without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scoring.rerank import StageTwoParams


def stage_two_reference(
    relevance: Sequence[float],
    intensity: Sequence[float],
    valence: Sequence[float],
    age_days: Sequence[float],
    is_emotional: Sequence[bool],
    anchor_matches: Sequence[Sequence[bool]] | Sequence[bool],
    strength: Sequence[float],
    scope_weight: Sequence[float],
    params: StageTwoParams,
    anchor_weights: Sequence[float] | None = None,
    anchor_rarity: Sequence[float] | None = None,
) -> tuple[list[int], list[float]]:
    n = len(relevance)
    rows = [list(row) if isinstance(row, Sequence) else [bool(row)] for row in anchor_matches]
    carried = [sum(1 for row in rows if row[j]) for j in range(len(rows[0]) if rows else 0)]
    weight = list(anchor_weights) if anchor_weights is not None else [1.0] * len(carried)
    rarity = list(anchor_rarity) if anchor_rarity is not None else [math.inf] * len(carried)
    specificity = [
        max((min(1.0 if n == 1 else math.log(n / carried[j]) / math.log(n), rarity[j]) * weight[j]
             for j, hit in enumerate(row) if hit), default=0.0)
        for row in rows
    ]
    scores: list[float] = []
    standing: list[bool] = []
    for i in range(n):
        if is_emotional[i]:
            half_life = max(params.per_intensity_squared * intensity[i] * intensity[i], params.min_half_life_days)
            base = intensity[i]
        else:
            half_life = params.factual_half_life_days
            base = params.factual_salience
        salience = base * 0.5 ** (max(age_days[i], 0.0) / half_life)
        ranking_salience = max(salience, params.factual_salience) if is_emotional[i] else salience
        weight = params.salience_base + (1.0 - params.salience_base) * ranking_salience
        feeling = intensity[i] if is_emotional[i] else 0.0
        felt = 1.0 - params.anchor_feeling_share + params.anchor_feeling_share * feeling
        boost = 1.0 + (params.anchor_boost - 1.0) * specificity[i] * felt
        scores.append(relevance[i] * weight * boost * strength[i] * scope_weight[i])
        toned = (is_emotional[i] and intensity[i] >= params.tone_min_intensity
                 and valence[i] <= params.tone_max_valence)
        standing.append(toned and salience < params.standing_rule_salience
                        and intensity[i] >= params.standing_min_intensity)
    eligible = [i for i in range(len(scores)) if not standing[i]]
    order = sorted(eligible, key=lambda i: (-scores[i], i))[: params.limit]
    return order, scores


def bm25_reference(
    documents: Sequence[Sequence[str]],
    query: dict[str, float],
    *,
    k1: float,
    b: float,
) -> list[float]:
    """Weighted, normalised BM25 of every document, the slow way: count every term of every document.

    ``documents`` are the partition's memories as index terms; ``query`` maps each distinct query term to its
    weight. It must score exactly as ``scoring.fusion.bm25_normalised`` over the statistics a store reports.
    """
    n = len(documents)
    average = sum(len(d) for d in documents) / n if n else 0.0
    idf = {}
    for term in query:
        frequency = max(sum(1 for d in documents if term in d), 1)
        idf[term] = math.log(1.0 + (n - frequency + 0.5) / (frequency + 0.5))
    mass = sum(weight * idf[term] for term, weight in query.items())
    scores = []
    for document in documents:
        total = 0.0
        for term, weight in query.items():
            tf = sum(1 for t in document if t == term)
            if tf:
                norm = k1 * (1.0 - b + b * len(document) / average)
                total += weight * idf[term] * tf * (k1 + 1.0) / (tf + norm)
        scores.append(min(max(total / mass, 0.0), 1.0) if mass > 0 else 0.0)
    return scores
