"""Live strength from the stored signal vector (seed: "Strength is multi-signal").

The stored signals are recency (last validated), retrievals, distinct query kinds, confidence and source trust; the
scalar ranking uses is computed here at query time, so changing a constant re-weights every memory at once. Decay is
hybrid: a fast exponential that erodes quickly plus a slow power-law tail (Ebbinghaus) that barely moves over years.
Canon and pinned memories have floors; a superseded (stale) memory is scaled down after the floors, so it never
outranks the fact that replaced it, canon or not.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
Counts = NDArray[np.integer[Any]] | NDArray[np.floating[Any]]
Mask = NDArray[np.bool_]

SECONDS_PER_DAY = 86_400.0

SOURCE_TRUST: dict[str, float] = {
    "user_stated": 1.0,
    "director": 1.0,
    "inferred": 0.7,
    "model_generated": 0.5,
}
"""Trust by where a memory came from: what the user said or the director wrote outranks what was guessed."""


@dataclass(frozen=True, slots=True)
class StrengthParams:
    """Plain floats (scoring imports nothing from the engine).

    Defaults, and why:
    - fast_weight 0.6, fast_half_life_days 7: most of a fresh memory's edge is recency on the scale of a week of
      conversation; the fast term is under 0.01 after six weeks.
    - tail_scale_days 30, tail_exponent 0.5: the tail halves at about 90 days and is still 0.16 of itself at three
      years, so old memories fade without vanishing. A fully trusted, never-retrieved memory crosses archive_below
      at about five years; an inferred one at about two and a half; a model-generated one at about fifteen months.
    - retrieval_gain 0.15, query_kind_gain 0.1 (per log1p): ten retrievals add about 0.36, five distinct query kinds
      about 0.18; being reached from many angles counts, but less than raw use.
    - max_usage_boost 1.5: use can at most multiply strength by 1.5 (ten retrievals from five kinds of query already
      reach it), so heavily retrieved memories cannot run away from everything else (no rich-get-richer).
    - canon_floor 0.6, pin_floor 0.8: character canon never fades below mid strength; an explicit pin is stronger
      still because a person asked for it.
    - stale_weight 0.2: a superseded memory scores at most 0.2, below a fresh fact from any source at confidence above
      0.4, even when it is canon or pinned.
    - archive_below 0.05: strength under which the archive job may move a memory to the cold archive.
    """

    fast_weight: float = 0.6
    fast_half_life_days: float = 7.0
    tail_scale_days: float = 30.0
    tail_exponent: float = 0.5
    retrieval_gain: float = 0.15
    query_kind_gain: float = 0.1
    max_usage_boost: float = 1.5
    canon_floor: float = 0.6
    pin_floor: float = 0.8
    stale_weight: float = 0.2
    archive_below: float = 0.05

    def __post_init__(self) -> None:
        for f in fields(self):
            if not np.isfinite(getattr(self, f.name)):
                raise ValueError(f"{f.name} must be finite, got {getattr(self, f.name)!r}")
        # fast_weight < 1 keeps a tail, so decay never reaches exactly 0 and the ordering of old memories survives.
        _check("fast_weight", self.fast_weight, 0.0 <= self.fast_weight < 1.0, "in [0, 1)")
        _check("fast_half_life_days", self.fast_half_life_days, self.fast_half_life_days > 0.0, "> 0")
        _check("tail_scale_days", self.tail_scale_days, self.tail_scale_days > 0.0, "> 0")
        _check("tail_exponent", self.tail_exponent, self.tail_exponent > 0.0, "> 0")
        _check("retrieval_gain", self.retrieval_gain, self.retrieval_gain >= 0.0, ">= 0")
        _check("query_kind_gain", self.query_kind_gain, self.query_kind_gain >= 0.0, ">= 0")
        _check("max_usage_boost", self.max_usage_boost, self.max_usage_boost >= 1.0, ">= 1")
        for name in ("canon_floor", "pin_floor", "stale_weight"):
            value = getattr(self, name)
            _check(name, value, 0.0 <= value <= 1.0, "in [0, 1]")
        _check("archive_below", self.archive_below, 0.0 <= self.archive_below < 1.0, "in [0, 1)")


def _check(name: str, value: float, ok: bool, expected: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {expected}, got {value!r}")


def hybrid_decay(
    age_days: F64, *, fast_weight: float, fast_half_life_days: float, tail_scale_days: float, tail_exponent: float
) -> F64:
    """The fraction of strength left at ``age_days``: 1 at age 0 (and for the future), non-increasing, never 0.

    The exponential term models quick forgetting of what has not been revisited; the power-law tail models the long
    Ebbinghaus retention that a pure exponential would wipe out within months.
    """
    age = np.maximum(np.asarray(age_days, dtype=np.float64), 0.0)
    fast = np.power(0.5, age / fast_half_life_days)
    tail = np.power(1.0 + age / tail_scale_days, -tail_exponent)
    result: F64 = fast_weight * fast + (1.0 - fast_weight) * tail
    return result


def strength_curve(days: F64, params: StrengthParams) -> F64:
    """The decay-only curve under ``params``, for plots and tuning notes."""
    return hybrid_decay(
        days,
        fast_weight=params.fast_weight,
        fast_half_life_days=params.fast_half_life_days,
        tail_scale_days=params.tail_scale_days,
        tail_exponent=params.tail_exponent,
    )


def usage_boost(retrievals: Counts, query_kinds: Counts, params: StrengthParams) -> F64:
    """Multiplier >= 1 from use; logarithmic and capped so frequent retrieval cannot snowball."""
    r = np.maximum(np.asarray(retrievals, dtype=np.float64), 0.0)
    q = np.maximum(np.asarray(query_kinds, dtype=np.float64), 0.0)
    boost = 1.0 + params.retrieval_gain * np.log1p(r) + params.query_kind_gain * np.log1p(q)
    capped: F64 = np.minimum(boost, params.max_usage_boost)
    return capped


class StrengthSignals(TypedDict):
    """A batch of memories' stored signals (row i = one memory), as ``strength`` and ``strength_components`` take
    them by keyword."""

    now_epoch: float
    last_validated_epoch: F64
    retrievals: Counts
    query_kinds: Counts
    confidence: F64
    source_trust: F64
    canon: Mask
    pinned: Mask
    stale: Mask


def strength_components(*, params: StrengthParams, **signals: Unpack[StrengthSignals]) -> dict[str, F64]:
    """Every step of the strength computation, so a ranking can be explained.

    Keys: "decay", "usage", "base" (clipped to [0, 1]), "floored" (after canon and pin floors) and "strength"
    (after the stale multiplier). Stale applies last: a superseded memory must never outrank the current fact.
    """
    age_days = (signals["now_epoch"] - np.asarray(signals["last_validated_epoch"], dtype=np.float64)) / SECONDS_PER_DAY
    decay = strength_curve(age_days, params)
    usage = usage_boost(signals["retrievals"], signals["query_kinds"], params)
    base = np.clip(signals["source_trust"] * signals["confidence"] * decay * usage, 0.0, 1.0)
    floored = np.where(signals["canon"], np.maximum(base, params.canon_floor), base)
    floored = np.where(signals["pinned"], np.maximum(floored, params.pin_floor), floored)
    final = np.where(signals["stale"], floored * params.stale_weight, floored)
    return {"decay": decay, "usage": usage, "base": base, "floored": floored, "strength": final}


def strength(*, params: StrengthParams, **signals: Unpack[StrengthSignals]) -> F64:
    """The live strength in [0, 1] per memory; see ``strength_components`` for the steps."""
    return strength_components(params=params, **signals)["strength"]


def source_trust_of(source: str) -> float:
    """Trust for a stored source name; an unknown source is a bug upstream, not a reason to guess."""
    try:
        return SOURCE_TRUST[source]
    except KeyError:
        raise ValueError(f"unknown source {source!r}; expected one of {sorted(SOURCE_TRUST)}") from None
