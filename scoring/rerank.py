"""Stage two: a deterministic rerank of stage one's candidates using the traces written beside each memory.

score = relevance x salience_weight x anchor_boost x strength x scope_weight, where

- salience_weight = salience_base + (1 - salience_base) x max(salience, factual_salience) for an emotional trace
  (its feeling adds weight while it lasts, and a faded feeling leaves the memory as heavy as small talk, not
  lighter), and salience_base + (1 - salience_base) x salience for a factual one;
- anchor_boost = 1 + (anchor_boost - 1) x specificity, where specificity is how rare the best anchor the message
  names is among the candidates: 1 for an anchor only this memory carries, 0 for one every candidate carries. An
  anchor every memory shares (the user's own name, a friend named in every turn) tells the candidates nothing.

A memory whose high-intensity negative feeling has decayed into a standing rule leaves the ranking (seed 004: it
stops competing for context slots and the rule speaks for it). Only the rare moment that clears its standing bar (a
loss at the tone bar, very intense sadness or shame at ``standing_min_intensity``: the engine passes each
candidate's bar) becomes one; any other toned memory simply decays out
of force, and a resolved one (a later memory settled it) is not toned at all: both rank as ordinary memories.
Every component is returned, so any ranking can be explained. Ties break by candidate position (stage one's
order), so the result is fully deterministic.
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
    standing_min_intensity: float = 0.0
    anchor_feeling_share: float = 0.0  # how much of the anchor boost depends on the memory's felt intensity


@dataclass(frozen=True, slots=True)
class StageTwoResult:
    order: NDArray[np.intp]  # indices into the candidate arrays, best first, at most ``limit``
    score: F64
    salience: F64
    salience_weight: F64
    anchor_boost: F64
    half_life_days: F64
    toned: NDArray[np.bool_]  # carries a tone rule in force (intense, negative, not resolved, not decayed out)
    standing: NDArray[np.bool_]  # toned, decayed and over the standing bar: a standing rule, left out of ``order``


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


def anchor_specificity(
    anchor_matches: NDArray[np.bool_], anchor_weights: F64 | None = None, anchor_rarity: F64 | None = None
) -> F64:
    """Per candidate, how rare the rarest anchor it shares with the message is among the candidates, in [0, 1].

    ``anchor_matches`` is candidates x anchors (which of the message's anchors each candidate carries); a 1-D
    array is one anchor. An anchor carried by ``d`` of ``n`` candidates has specificity ln(n / d) / ln(n): 1 when
    only one candidate carries it, 0 when all do, times the anchor's weight (``anchor_weights``: 1 for an anchor
    the message names, less for one only the conversation window names; all 1 when None). ``anchor_rarity``, when
    given, is each anchor's rarity in the whole partition, ln(N / df) / ln(N) over its memories: the lower of the
    two rarities counts, so a name half the partition carries (a speaker's own name) boosts nothing even when few
    of the candidates carry it. A candidate without a match has 0.
    """
    matches = np.asarray(anchor_matches, dtype=bool)
    if matches.ndim == 1:
        matches = matches[:, None]
    n = matches.shape[0]
    carried = np.maximum(matches.sum(axis=0), 1)
    per_anchor = np.ones(matches.shape[1]) if n <= 1 else np.log(n / carried) / np.log(n)
    if anchor_rarity is not None:
        per_anchor = np.minimum(per_anchor, anchor_rarity)
    if anchor_weights is not None:
        per_anchor = per_anchor * anchor_weights
    best: F64 = np.where(matches, per_anchor, 0.0).max(axis=1, initial=0.0)
    return best


def stage_two(
    relevance: F64,
    intensity: F64,
    valence: F64,
    age_days: F64,
    is_emotional: NDArray[np.bool_],
    anchor_matches: NDArray[np.bool_],
    strength: F64,
    scope_weight: F64,
    params: StageTwoParams,
    *,
    standing_bar: F64 | None = None,
    resolved: NDArray[np.bool_] | None = None,
    standing_intensity: F64 | None = None,
    anchor_weights: F64 | None = None,
    anchor_rarity: F64 | None = None,
) -> StageTwoResult:
    """Rank the candidates; ``anchor_matches`` is candidates x the message's anchors (see ``anchor_specificity``).

    ``standing_bar`` is each candidate's standing bar (``params.standing_min_intensity`` for all when None; the
    engine's depends on the register, and is infinite where a register never stands); ``resolved`` says which
    were resolved by a later memory (none, when None); ``standing_intensity`` is what the bar is held against
    (each memory's own intensity when None; recall passes its episode's most intense moment, since a rule stands
    for a whole episode)."""
    salience, half_life = salience_for(intensity, age_days, is_emotional, params)
    ranking_salience = np.where(is_emotional, np.maximum(salience, params.factual_salience), salience)
    salience_weight = params.salience_base + (1.0 - params.salience_base) * ranking_salience
    feeling = np.where(is_emotional, intensity, 0.0)
    felt = 1.0 - params.anchor_feeling_share + params.anchor_feeling_share * feeling
    boost = 1.0 + (params.anchor_boost - 1.0) * anchor_specificity(anchor_matches, anchor_weights, anchor_rarity) * felt
    score = relevance * salience_weight * boost * strength * scope_weight
    toned, standing = tone_masks(
        intensity, valence, salience, is_emotional, min_intensity=params.tone_min_intensity,
        max_valence=params.tone_max_valence, standing_rule_salience=params.standing_rule_salience,
        standing_min_intensity=params.standing_min_intensity, standing_bar=standing_bar, resolved=resolved,
        standing_intensity=standing_intensity,
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
    standing_min_intensity: float = 0.0,
    standing_bar: F64 | None = None,
    resolved: NDArray[np.bool_] | None = None,
    standing_intensity: F64 | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Which memories carry a tone rule in force, and which of those have decayed into standing rules.

    The one place this is decided: stage two asks it of each candidate (``stage_two``), recall's tone rules of
    each episode's most intense memory, so a memory that left the ranking as a standing rule is the rule's.

    An intense negative trace (at or above ``min_intensity``, at or below ``max_valence``) carries a tone rule
    while its salience stays at or above ``standing_rule_salience``. Once below, it becomes a standing rule, in
    force on every turn, if it clears the standing bar (``standing_intensity``, its own intensity by default, at
    or above its ``standing_bar``, ``standing_min_intensity`` by default); otherwise it decays out of force. A
    ``resolved`` memory carries no rule at all.
    """
    toned = is_emotional & (intensity >= min_intensity) & (valence <= max_valence)
    if resolved is not None:
        toned &= ~resolved
    decayed = salience < standing_rule_salience
    stands = ((intensity if standing_intensity is None else standing_intensity)
              >= (standing_min_intensity if standing_bar is None else standing_bar))
    standing = toned & decayed & stands
    return toned & ~(decayed & ~standing), standing
