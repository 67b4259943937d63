"""Properties of the stage-two scorer, and agreement with the plain-Python reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.domain.tuning import TuningProfile
from engine.strength import stage_two_params
from scoring.decay import exponential_decay, half_life_days
from scoring.reference import stage_two_reference
from scoring.rerank import stage_two, tone_masks

PARAMS = stage_two_params(TuningProfile())
# The anchor boost's geometry alone: every memory that carries the anchor gets it, felt or not.
ANY_MEMORY = dataclasses.replace(PARAMS, anchor_feeling_share=0.0)


@st.composite
def candidate_arrays(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(1, 40))

    def floats(lo: float, hi: float) -> np.ndarray:
        return draw(arrays(np.float64, n, elements=st.floats(lo, hi, allow_nan=False)))

    emotional = draw(arrays(np.bool_, n))
    anchors = draw(arrays(np.bool_, (n, draw(st.integers(0, 4)))))  # which of the message's anchors each carries
    return (floats(0, 1), floats(0, 1), floats(-1, 1), floats(0, 2000), emotional, anchors, floats(0.01, 2),
            floats(0.01, 2))


def test_default_half_lives_match_the_design() -> None:
    """Intensity 0.3 holds about three days, 0.9 about twenty-seven (seed 004)."""
    got = half_life_days(np.array([0.3, 0.9]), per_intensity_squared=PARAMS.per_intensity_squared,
                         min_half_life_days=PARAMS.min_half_life_days)
    assert got == pytest.approx([3.0, 27.0], rel=0.01)


@given(candidate_arrays())
@settings(max_examples=300, deadline=None)
def test_numpy_scorer_ranks_exactly_like_the_reference(case: tuple[np.ndarray, ...]) -> None:
    fast = stage_two(*case, PARAMS)
    order, scores = stage_two_reference(*(a.tolist() for a in case), PARAMS)  # type: ignore[arg-type]
    assert fast.order.tolist() == order
    assert fast.score == pytest.approx(scores)


@given(candidate_arrays())
@settings(max_examples=200, deadline=None)
def test_scores_are_finite_and_top_k_agrees_with_a_sort(case: tuple[np.ndarray, ...]) -> None:
    result = stage_two(*case, PARAMS)
    assert np.all(np.isfinite(result.score))
    eligible = np.flatnonzero(~result.standing)
    assert len(result.order) == min(PARAMS.limit, len(eligible))
    assert not result.standing[result.order].any()  # standing rules never take a context slot
    top = result.score[result.order]
    assert np.all(np.diff(top) <= 0)
    others = np.setdiff1d(eligible, result.order)
    if len(others) and len(top):
        assert top.min() >= result.score[others].max()


@given(candidate_arrays(), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_selection_does_not_depend_on_candidate_order(case: tuple[np.ndarray, ...], rnd) -> None:  # type: ignore[no-untyped-def]
    n = len(case[0])
    perm = np.array(rnd.sample(range(n), n))
    base = stage_two(*case, PARAMS)
    shuffled = stage_two(*(a[perm] for a in case), PARAMS)
    assert sorted(np.round(base.score[base.order], 12)) == sorted(np.round(shuffled.score[shuffled.order], 12))


@given(st.floats(0.0, 1.0), st.floats(0, 1000), st.floats(0, 1000))
def test_decay_is_monotone_in_age(intensity: float, age_a: float, age_b: float) -> None:
    half = half_life_days(np.array([intensity]), per_intensity_squared=PARAMS.per_intensity_squared,
                          min_half_life_days=PARAMS.min_half_life_days)
    young, old = sorted([age_a, age_b])
    assert exponential_decay(np.array([young]), half)[0] >= exponential_decay(np.array([old]), half)[0]


def test_an_anchor_hit_outranks_a_slightly_more_relevant_miss() -> None:
    relevance = np.array([0.5, 0.4])
    result = stage_two(relevance, np.array([0.2, 0.2]), np.zeros(2), np.array([5.0, 5.0]), np.array([True, True]),
                       np.array([False, True]), np.ones(2), np.ones(2), ANY_MEMORY)
    assert result.order.tolist()[0] == 1
    assert result.anchor_boost.tolist() == [1.0, ANY_MEMORY.anchor_boost]


def test_an_anchor_every_candidate_carries_boosts_nobody_and_a_rare_one_boosts_fully() -> None:
    """The user's own name in every memory tells the candidates nothing; "Luna" in one of them does."""
    everyone, luna = [True, True, True, True], [False, False, True, False]
    matches = np.array([everyone, luna]).T
    result = stage_two(np.array([0.5, 0.5, 0.4, 0.45]), np.zeros(4), np.zeros(4), np.full(4, 5.0), np.zeros(4, bool),
                       matches, np.ones(4), np.ones(4), ANY_MEMORY)
    assert result.anchor_boost.tolist() == pytest.approx([1.0, 1.0, ANY_MEMORY.anchor_boost, 1.0])
    assert result.order.tolist()[0] == 2


def test_an_anchor_half_the_candidates_carry_boosts_them_partly() -> None:
    result = stage_two(np.full(4, 0.5), np.zeros(4), np.zeros(4), np.full(4, 5.0), np.zeros(4, bool),
                       np.array([True, True, False, False]), np.ones(4), np.ones(4), ANY_MEMORY)
    half = 1.0 + (ANY_MEMORY.anchor_boost - 1.0) * 0.5  # ln(4 / 2) / ln(4)
    assert result.anchor_boost.tolist() == pytest.approx([half, half, 1.0, 1.0])


def test_a_faded_feeling_weighs_as_much_as_small_talk_never_less() -> None:
    """A mild moment from months ago is no less worth recalling than a fact said the same day; a fresh intense
    one is worth more."""
    ages = np.array([180.0, 180.0, 1.0])
    result = stage_two(np.full(3, 0.5), np.array([0.3, 0.3, 0.9]), np.zeros(3), ages, np.array([False, True, True]),
                       np.zeros(3, bool), np.ones(3), np.ones(3), PARAMS)
    factual, faded, fresh = result.salience_weight
    assert factual <= faded == pytest.approx(factual, rel=0.01)
    assert fresh > factual
    assert result.salience[1] < 1e-6  # the feeling itself has faded; only its weight in ranking is floored


def test_facts_stay_nearly_flat_while_mild_feelings_fade() -> None:
    ages = np.array([180.0, 180.0])
    result = stage_two(np.array([0.5, 0.5]), np.array([0.3, 0.3]), np.zeros(2), ages, np.array([False, True]),
                       np.zeros(2, bool), np.ones(2), np.ones(2), PARAMS)
    factual, mild = result.salience
    assert factual > 0.95 * PARAMS.factual_salience
    assert mild < 1e-6


def test_a_decayed_grief_memory_leaves_the_ranking_and_stands_as_a_rule() -> None:
    result = stage_two(np.array([0.9, 0.2]), np.array([0.9, 0.1]), np.array([-0.9, 0.0]), np.array([400.0, 1.0]),
                       np.array([True, False]), np.zeros(2, bool), np.ones(2), np.ones(2), PARAMS)
    assert result.standing.tolist() == [True, False]
    assert result.order.tolist() == [1]


def test_intense_negative_memories_turn_into_standing_rules_once_decayed() -> None:
    intensity, valence = np.array([0.9, 0.9, 0.9, 0.4]), np.array([-0.8, -0.8, 0.7, -0.8])
    salience = np.array([0.7, 0.05, 0.05, 0.05])
    toned, standing = tone_masks(intensity, valence, salience, np.ones(4, bool), min_intensity=0.6,
                                 max_valence=-0.25, standing_rule_salience=0.15)
    assert toned.tolist() == [True, True, False, False]
    assert standing.tolist() == [False, True, False, False]


def test_only_a_memory_over_its_standing_bar_stands_and_the_rest_decays_out_of_force() -> None:
    """Decayed: a loss (bar 0.56) stands, trivia sadness at 0.73 (bar 0.84) and anger (never) decay out."""
    intensity, valence = np.array([0.8, 0.73, 0.9, 0.9]), np.full(4, -0.8)
    salience = np.full(4, 0.05)
    toned, standing = tone_masks(intensity, valence, salience, np.ones(4, bool), min_intensity=0.56,
                                 max_valence=-0.25, standing_rule_salience=0.15,
                                 standing_bar=np.array([0.56, 0.84, np.inf, 0.84]))
    assert standing.tolist() == [True, False, False, True]
    assert toned.tolist() == [True, False, False, True]  # decayed below the bar: no tone rule at all
    # Held against the episode's most intense moment, a quieter member stands with it.
    _, with_episode = tone_masks(intensity, valence, salience, np.ones(4, bool), min_intensity=0.56,
                                 max_valence=-0.25, standing_rule_salience=0.15,
                                 standing_bar=np.array([0.56, 0.84, np.inf, 0.84]),
                                 standing_intensity=np.array([0.8, 0.9, 0.9, 0.9]))
    assert with_episode.tolist() == [True, True, False, True]


def test_a_resolved_memory_carries_no_rule_and_ranks_as_a_memory() -> None:
    args = (np.array([0.9, 0.2]), np.array([0.9, 0.1]), np.array([-0.9, 0.0]), np.array([400.0, 1.0]),
            np.array([True, False]), np.zeros(2, bool), np.ones(2), np.ones(2), PARAMS)
    resolved = stage_two(*args, resolved=np.array([True, False]))
    assert resolved.standing.tolist() == [False, False] and resolved.toned.tolist() == [False, False]
    assert resolved.order.tolist() == [0, 1]
    fresh = stage_two(np.array([0.9]), np.array([0.9]), np.array([-0.9]), np.array([1.0]), np.array([True]),
                      np.zeros(1, bool), np.ones(1), np.ones(1), PARAMS, resolved=np.array([True]))
    assert fresh.toned.tolist() == [False]


def test_the_anchor_boost_goes_to_what_was_felt() -> None:
    """Seed 004: intensity, "boosted hard when the current message contains one of the anchors". A grief about
    Luna gets the boost in proportion to how it felt; small talk that happens to name her gets none."""
    matches = np.array([[True], [True], [False]])
    result = stage_two(np.array([0.4, 0.4, 0.4]), np.array([0.9, 0.1, 0.9]), np.zeros(3), np.full(3, 5.0),
                       np.array([True, False, True]), matches, np.ones(3), np.ones(3), PARAMS)
    rarity = np.log(3 / 2) / np.log(3)
    assert result.anchor_boost.tolist() == pytest.approx([1 + (PARAMS.anchor_boost - 1) * rarity * 0.9, 1.0, 1.0])
