"""Live strength: the hybrid decay's shape, usage saturation, floors, the stale penalty and parameter checks."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, get_args

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.domain.models import Source
from scoring.decay import exponential_decay
from scoring.strength import (
    SOURCE_TRUST,
    StrengthParams,
    hybrid_decay,
    source_trust_of,
    strength,
    strength_components,
    strength_curve,
)

PARAMS = StrengthParams()
NOW = 1_750_000_000.0
DAY = 86_400.0
YEAR = 365.0


def days(*values: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array(values, dtype=np.float64)


def memory(n: int = 1, **overrides: Any) -> dict[str, Any]:
    """Keyword arguments for ``strength``: n fresh, fully trusted, never-retrieved, plain memories, then overrides."""
    kwargs: dict[str, Any] = {
        "now_epoch": NOW,
        "last_validated_epoch": np.full(n, NOW),
        "retrievals": np.zeros(n, dtype=np.int64),
        "query_kinds": np.zeros(n, dtype=np.int64),
        "confidence": np.ones(n),
        "source_trust": np.ones(n),
        "canon": np.zeros(n, dtype=np.bool_),
        "pinned": np.zeros(n, dtype=np.bool_),
        "stale": np.zeros(n, dtype=np.bool_),
        "params": PARAMS,
    }
    for key, value in overrides.items():
        kwargs[key] = value if key in ("now_epoch", "params") else np.broadcast_to(np.asarray(value), (n,)).copy()
    return kwargs


def aged(age_days: float) -> float:
    return NOW - age_days * DAY


# --- decay ---------------------------------------------------------------------------------------------------------


def test_decay_is_whole_at_age_zero_and_for_future_timestamps() -> None:
    assert strength_curve(days(0.0, -3.0, -1e6), PARAMS) == pytest.approx([1.0, 1.0, 1.0])


@given(st.floats(0, 1e5), st.floats(0, 1e5))
def test_decay_never_increases_with_age(a: float, b: float) -> None:
    young, old = sorted([a, b])
    curve = strength_curve(days(young, old), PARAMS)
    assert curve[0] >= curve[1]


def test_decay_never_reaches_zero_even_after_centuries() -> None:
    assert np.all(strength_curve(days(10 * YEAR, 100 * YEAR, 300 * YEAR), PARAMS) > 0.0)


def test_tail_keeps_a_three_year_old_memory_while_a_pure_exponential_forgets_it() -> None:
    three_years = days(3 * YEAR)
    hybrid = strength_curve(three_years, PARAMS)[0]
    exponential = exponential_decay(three_years, np.array([PARAMS.fast_half_life_days]))[0]
    assert hybrid > 0.05
    assert exponential < 1e-40


def test_tail_barely_moves_over_long_horizons() -> None:
    one, two, three = strength_curve(days(YEAR, 2 * YEAR, 3 * YEAR), PARAMS)
    assert three / two > 0.75
    assert two / one > 0.6


def test_fast_term_dominates_the_first_days_and_the_tail_dominates_after_a_few_weeks() -> None:
    ages = days(1.0, 14.0, 21.0, 28.0, 90.0, YEAR)
    full = strength_curve(ages, PARAMS)
    tail_only = hybrid_decay(ages, fast_weight=PARAMS.fast_weight, fast_half_life_days=1e-9,
                             tail_scale_days=PARAMS.tail_scale_days, tail_exponent=PARAMS.tail_exponent)
    tail_share = tail_only / full
    assert tail_share[0] < 0.5  # day one: most of what is left is still the fast term
    assert np.all(tail_share[1:] > 0.5)
    assert tail_share[-1] > 0.99


# --- usage ---------------------------------------------------------------------------------------------------------


def test_retrievals_and_query_kinds_raise_strength() -> None:
    old = aged(60)
    quiet = strength(**memory(last_validated_epoch=old))[0]
    used = strength(**memory(last_validated_epoch=old, retrievals=3))[0]
    reached_widely = strength(**memory(last_validated_epoch=old, retrievals=3, query_kinds=3))[0]
    assert quiet < used < reached_widely


def test_usage_saturates_so_heavy_retrieval_cannot_run_away() -> None:
    old = aged(60)
    counts = np.array([0, 10, 100, 10_000, 10**9])
    got = strength(**memory(5, last_validated_epoch=old, retrievals=counts, query_kinds=counts))
    assert np.all(np.diff(got) >= 0)
    assert got[-1] / got[0] == pytest.approx(PARAMS.max_usage_boost)
    assert got[-1] == pytest.approx(got[-2])  # already at the cap


def test_negative_counts_are_treated_as_zero() -> None:
    old = aged(60)
    assert strength(**memory(last_validated_epoch=old, retrievals=-5, query_kinds=-1))[0] == pytest.approx(
        strength(**memory(last_validated_epoch=old))[0]
    )


# --- floors and stale ----------------------------------------------------------------------------------------------


def test_canon_and_pin_floors_hold_for_ancient_never_retrieved_memories() -> None:
    ancient = aged(50 * YEAR)
    kinds = memory(
        4,
        last_validated_epoch=ancient,
        confidence=0.3,
        source_trust=source_trust_of("model_generated"),
        canon=np.array([False, True, False, True]),
        pinned=np.array([False, False, True, True]),
    )
    plain, canon, pinned, both = strength(**kinds)
    assert plain < PARAMS.archive_below
    assert canon == pytest.approx(PARAMS.canon_floor)
    assert pinned == pytest.approx(PARAMS.pin_floor)
    assert both == pytest.approx(max(PARAMS.canon_floor, PARAMS.pin_floor))


def test_floors_do_not_lower_a_strong_memory() -> None:
    fresh_canon = strength(**memory(canon=True, retrievals=10))[0]
    assert fresh_canon == pytest.approx(1.0)


def test_a_stale_canon_memory_ranks_below_the_fresh_fact_that_replaced_it() -> None:
    got = strength(
        **memory(
            3,
            last_validated_epoch=np.array([NOW, NOW, NOW - 3600]),
            retrievals=np.array([1000, 1000, 0]),
            query_kinds=np.array([50, 50, 0]),
            confidence=np.array([1.0, 1.0, 0.6]),
            source_trust=np.array([1.0, 1.0, source_trust_of("inferred")]),
            canon=np.array([True, True, False]),
            pinned=np.array([False, True, False]),
            stale=np.array([True, True, False]),
        )
    )
    stale_canon, stale_pinned_canon, replacement = got
    assert stale_canon < replacement
    assert stale_pinned_canon < replacement


@st.composite
def memory_arrays(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 40))

    def floats(lo: float, hi: float) -> np.ndarray[Any, np.dtype[np.float64]]:
        return draw(arrays(np.float64, n, elements=st.floats(lo, hi, allow_nan=False)))

    def bools() -> np.ndarray[Any, np.dtype[np.bool_]]:
        return draw(arrays(np.bool_, n))

    return memory(
        n,
        last_validated_epoch=NOW - floats(-10 * DAY, 100 * YEAR * DAY),
        retrievals=draw(arrays(np.int64, n, elements=st.integers(0, 10**9))),
        query_kinds=draw(arrays(np.int64, n, elements=st.integers(0, 1000))),
        confidence=floats(0, 1),
        source_trust=np.array([draw(st.sampled_from(sorted(SOURCE_TRUST.values()))) for _ in range(n)]),
        canon=bools(),
        pinned=bools(),
        stale=bools(),
    )


@given(memory_arrays())
@settings(max_examples=200, deadline=None)
def test_strength_is_in_unit_interval_and_components_explain_it(kwargs: dict[str, Any]) -> None:
    parts = strength_components(**kwargs)
    final = strength(**kwargs)
    assert np.all((final >= 0.0) & (final <= 1.0))
    assert np.array_equal(parts["strength"], final)
    assert np.all(parts["floored"] >= parts["base"])
    assert np.all(parts["floored"][kwargs["canon"]] >= PARAMS.canon_floor)
    assert np.all(parts["floored"][kwargs["pinned"]] >= PARAMS.pin_floor)
    assert np.all(final[kwargs["stale"]] <= PARAMS.stale_weight)
    assert np.all((parts["usage"] >= 1.0) & (parts["usage"] <= PARAMS.max_usage_boost))


# --- sources and parameters ----------------------------------------------------------------------------------------


def test_every_engine_source_has_a_trust_and_user_words_outrank_guesses() -> None:
    assert set(get_args(Source)) == set(SOURCE_TRUST)
    assert source_trust_of("user_stated") == source_trust_of("director") == 1.0
    assert source_trust_of("user_stated") > source_trust_of("inferred") > source_trust_of("model_generated") > 0


def test_unknown_source_is_rejected() -> None:
    with pytest.raises(ValueError, match="gossip"):
        source_trust_of("gossip")


BAD_VALUES: dict[str, list[float]] = {
    "fast_weight": [-0.1, 1.0, 1.5],
    "fast_half_life_days": [0.0, -1.0],
    "tail_scale_days": [0.0, -30.0],
    "tail_exponent": [0.0, -0.5],
    "retrieval_gain": [-0.01],
    "query_kind_gain": [-0.01],
    "max_usage_boost": [0.99, 0.0],
    "canon_floor": [-0.1, 1.1],
    "pin_floor": [-0.1, 1.1],
    "stale_weight": [-0.1, 1.1],
    "archive_below": [-0.1, 1.0],
}


def test_every_parameter_is_validated() -> None:
    assert set(BAD_VALUES) == {f.name for f in fields(StrengthParams)}


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in BAD_VALUES.items() for v in vs])
def test_invalid_parameters_raise_naming_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        StrengthParams(**{field: value})


@pytest.mark.parametrize("field", sorted(BAD_VALUES))
def test_non_finite_parameters_raise_naming_the_field(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        StrengthParams(**{field: float("nan")})
