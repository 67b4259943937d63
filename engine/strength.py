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
from scoring import consolidation
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


@functools.lru_cache(maxsize=256)
def gate_params(profile: TuningProfile) -> consolidation.GateParams:
    """The consolidation gate's parameters from a profile (``scoring.consolidation``)."""
    c = profile.consolidation
    return consolidation.GateParams(
        mode=c.mode, threshold=c.threshold, k=c.k,
        weights=(c.weight_retrievals, c.weight_query_kinds, c.weight_confidence, c.weight_source_trust,
                 c.weight_stated, c.weight_age),
        bars=(c.bar_retrievals, c.bar_query_kinds, c.bar_confidence, c.bar_source_trust, c.bar_stated,
              c.bar_age_days),
        retrieval_scale=c.retrieval_scale, query_kind_scale=c.query_kind_scale, stated_scale=c.stated_scale,
        age_scale_days=c.age_scale_days,
    )


def signal_vectors(memories: Sequence[Memory], states: dict[str, MemoryState], now: datetime,
                   sources: dict[str, MemoryState] | None = None) -> np.ndarray:
    """Each memory's consolidation signal vector (``scoring.consolidation.SIGNALS``), from its stored state.

    A provisional fact is out of recall, so it is never retrieved itself: what came up is the turns it was
    distilled from. Its retrievals therefore add those of its provenance memories (their states in ``sources``),
    and its query kinds are the union of theirs and its own."""
    default = MemoryState(memory_id="")
    found = sources or {}
    rows = []
    for memory in memories:
        s = (states.get(memory.memory_id) or default).signals
        provenance = [found[m].signals for m in (memory.fact.provenance if memory.fact else ()) if m in found]
        retrievals = s.retrievals + sum(p.retrievals for p in provenance)
        kinds = set(s.query_kinds).union(*(p.query_kinds for p in provenance))
        rows.append((retrievals, len(kinds), s.confidence, strength_kernel.source_trust_of(s.source), s.mentions,
                     max((now - memory.created_at).total_seconds(), 0.0) / 86_400))
    return np.array(rows, dtype=np.float64).reshape(-1, len(consolidation.SIGNALS))
