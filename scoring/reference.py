"""A plain-Python reference of stage two, for differential tests and the benchmark's baseline.

It must rank exactly as ``scoring.rerank.stage_two``; it is deliberately written without numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

from scoring.rerank import StageTwoParams


def stage_two_reference(
    relevance: Sequence[float],
    intensity: Sequence[float],
    valence: Sequence[float],
    age_days: Sequence[float],
    is_emotional: Sequence[bool],
    anchor_hit: Sequence[bool],
    strength: Sequence[float],
    scope_weight: Sequence[float],
    params: StageTwoParams,
) -> tuple[list[int], list[float]]:
    scores: list[float] = []
    standing: list[bool] = []
    for i in range(len(relevance)):
        if is_emotional[i]:
            half_life = max(params.per_intensity_squared * intensity[i] * intensity[i], params.min_half_life_days)
            base = intensity[i]
        else:
            half_life = params.factual_half_life_days
            base = params.factual_salience
        salience = base * 0.5 ** (max(age_days[i], 0.0) / half_life)
        weight = params.salience_base + (1.0 - params.salience_base) * salience
        boost = params.anchor_boost if anchor_hit[i] else 1.0
        scores.append(relevance[i] * weight * boost * strength[i] * scope_weight[i])
        toned = (is_emotional[i] and intensity[i] >= params.tone_min_intensity
                 and valence[i] <= params.tone_max_valence)
        standing.append(toned and salience < params.standing_rule_salience)
    eligible = [i for i in range(len(scores)) if not standing[i]]
    order = sorted(eligible, key=lambda i: (-scores[i], i))[: params.limit]
    return order, scores
