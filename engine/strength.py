"""The tuning profile's constants for the scoring kernels, and each memory's live strength.

Recall, the lifecycle, the writer and the tuning page all read the same parameter objects from a profile, so they
are built here once (cached: the profiles are frozen and hashable, and recall asks every turn).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from engine.domain.models import Memory, MemoryState
from engine.domain.tuning import TuningProfile
from scoring import strength as strength_kernel
from scoring.rerank import StageTwoParams


@functools.lru_cache(maxsize=256)
def stage_two_params(profile: TuningProfile, limit: int | None = None) -> StageTwoParams:
    """The kernel's parameters from a (frozen, hashable) profile; cached, since recall asks every turn."""
    scoring = profile.scoring
    return StageTwoParams(
        limit=scoring.result_limit if limit is None else limit,
        per_intensity_squared=scoring.half_life_days_per_intensity_squared,
        min_half_life_days=scoring.min_half_life_days,
        factual_salience=scoring.factual_salience,
        factual_half_life_days=scoring.factual_half_life_days,
        salience_base=scoring.salience_base,
        anchor_boost=scoring.anchor_boost,
        anchor_feeling_share=scoring.anchor_feeling_share,
        tone_min_intensity=profile.tone.min_intensity,
        tone_max_valence=profile.tone.max_valence,
        standing_rule_salience=profile.tone.standing_rule_salience,
        standing_min_intensity=profile.tone.standing_min_intensity,
    )


@functools.lru_cache(maxsize=256)
def strength_params(profile: TuningProfile) -> strength_kernel.StrengthParams:
    return strength_kernel.StrengthParams(**profile.strength.model_dump(exclude={"ranking_weight"}))


def strengths(
    memories: Sequence[Memory], states: dict[str, MemoryState], now: datetime, profile: TuningProfile, *,
    with_stale: bool = True,
) -> np.ndarray:
    """The live strength scalar of each memory, from its stored signal vector (scoring.strength).
    ``with_stale=False`` leaves the stale multiplier out, for a caller that applies it itself."""
    # A memory without a state reads as the default one (its id is not read): one made, not one per memory.
    default = MemoryState(memory_id="")
    rows = [states.get(m.memory_id) or default for m in memories]
    validated = [
        (s.signals.last_validated or m.created_at).timestamp() for m, s in zip(memories, rows, strict=True)
    ]
    return strength_kernel.strength(
        now_epoch=now.timestamp(),
        last_validated_epoch=np.array(validated, dtype=np.float64),
        retrievals=np.array([s.signals.retrievals for s in rows], dtype=np.float64),
        query_kinds=np.array([len(s.signals.query_kinds) for s in rows], dtype=np.float64),
        confidence=np.array([s.signals.confidence for s in rows], dtype=np.float64),
        source_trust=np.array([strength_kernel.source_trust_of(s.signals.source) for s in rows], dtype=np.float64),
        # The protected class: canon, and atomic facts (a fact is outdated by supersession, not by age).
        canon=np.array([m.scope == "canon" or m.kind == "fact" for m in memories], dtype=bool),
        pinned=np.array([s.pinned for s in rows], dtype=bool),
        stale=np.array([with_stale and s.stale for s in rows], dtype=bool),
        params=strength_params(profile),
    )
