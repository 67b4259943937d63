"""Stage two: a deterministic rerank of stage one's candidates using the traces written beside each memory.

score = relevance x salience_weight x anchor_boost x strength x scope_weight, where
salience_weight = salience_base + (1 - salience_base) x salience. Every component is returned, so any ranking
can be explained. Ties break by candidate position (stage one's order), so the result is fully deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoring.decay import salience as decayed_salience

F64 = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class StageTwoParams:
    """Plain floats (scoring imports nothing from the engine); the engine fills them from the tuning profile."""

    limit: int
    per_intensity_squared: float
    min_half_life_days: float
    factual_salience: float
    factual_half_life_days: float
    salience_base: float
    anchor_boost: float
    tone_min_intensity: float
    tone_max_valence: float
    standing_rule_salience: float


@dataclass(frozen=True, slots=True)
class StageTwoResult:
    order: NDArray[np.intp]  # indices into the candidate arrays, best first, at most ``limit``
    score: F64
    salience: F64
    salience_weight: F64
    anchor_boost: F64
    half_life_days: F64
    toned: NDArray[np.bool_]  # carries a tone rule (high-intensity negative emotional trace)
    standing: NDArray[np.bool_]  # toned and decayed: a standing rule, left out of ``order``


def salience_for(
    intensity: F64, age_days: F64, is_emotional: NDArray[np.bool_], params: StageTwoParams
) -> tuple[F64, F64]:
    """Salience and half-life per memory with the profile's decay constants."""
    return decayed_salience(
        intensity,
        age_days,
        is_emotional,
        per_intensity_squared=params.per_intensity_squared,
        min_half_life_days=params.min_half_life_days,
        factual_salience=params.factual_salience,
        factual_half_life_days=params.factual_half_life_days,
    )


def stage_two(
    relevance: F64,
    intensity: F64,
    valence: F64,
    age_days: F64,
    is_emotional: NDArray[np.bool_],
    anchor_hit: NDArray[np.bool_],
    strength: F64,
    scope_weight: F64,
    params: StageTwoParams,
) -> StageTwoResult:
    salience, half_life = salience_for(intensity, age_days, is_emotional, params)
    salience_weight = params.salience_base + (1.0 - params.salience_base) * salience
    boost = np.where(anchor_hit, params.anchor_boost, 1.0)
    score = relevance * salience_weight * boost * strength * scope_weight
    toned, standing = tone_masks(
        intensity, valence, salience, is_emotional, min_intensity=params.tone_min_intensity,
        max_valence=params.tone_max_valence, standing_rule_salience=params.standing_rule_salience,
    )
    # Standing rules stop competing for context slots. A stable sort on the negated score keeps stage one's
    # order among equal scores.
    eligible = np.flatnonzero(~standing)
    order = eligible[np.argsort(-score[eligible], kind="stable")][: params.limit]
    return StageTwoResult(order, score, salience, salience_weight, boost, half_life, toned, standing)


def tone_masks(
    intensity: F64,
    valence: F64,
    salience: F64,
    is_emotional: NDArray[np.bool_],
    *,
    min_intensity: float,
    max_valence: float,
    standing_rule_salience: float,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Which memories carry a tone rule, and which of those have decayed into standing rules.

    A high-intensity negative trace never decays to zero in effect: once its salience falls below the standing
    threshold it stops competing for context slots and becomes a rule in force on every turn.
    """
    toned = is_emotional & (intensity >= min_intensity) & (valence <= max_valence)
    return toned, toned & (salience < standing_rule_salience)
