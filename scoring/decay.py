"""Decay curves. Emotional salience decays on a clock that depends on intensity; facts are nearly flat."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]


def half_life_days(intensity: F64, *, per_intensity_squared: float, min_half_life_days: float) -> F64:
    """Half-life grows with intensity squared: a mild 0.3 fades in days, a 0.9 peak holds for about a month."""
    return np.maximum(per_intensity_squared * np.square(intensity), min_half_life_days)


def exponential_decay(age_days: F64, half_life: F64) -> F64:
    """The fraction left after ``age_days`` with the given half-life; 1 for memories from the future or now."""
    return np.power(0.5, np.maximum(age_days, 0.0) / half_life)


def salience(
    intensity: F64,
    age_days: F64,
    is_emotional: NDArray[np.bool_],
    *,
    per_intensity_squared: float,
    min_half_life_days: float,
    factual_salience: float,
    factual_half_life_days: float,
) -> tuple[F64, F64]:
    """Salience in [0, 1] and the half-life used, per memory.

    Emotional traces: intensity decayed by age with an intensity-scaled half-life. Factual traces: a flat weight
    with a very long half-life, because facts become wrong when replaced, not when old.
    """
    emotional_half_life = half_life_days(
        intensity, per_intensity_squared=per_intensity_squared, min_half_life_days=min_half_life_days
    )
    half_life = np.where(is_emotional, emotional_half_life, factual_half_life_days)
    base = np.where(is_emotional, intensity, factual_salience)
    return base * exponential_decay(age_days, half_life), half_life
