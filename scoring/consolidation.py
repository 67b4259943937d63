"""The consolidation gate (seed 000, "propose, never write"): a pure function over candidates' signal vectors.

A candidate is a provisional fact the nightly sweep looks at. Its signal vector has six columns (``SIGNALS``):

- ``retrievals``: how many times recall returned it;
- ``query_kinds``: how many distinct kinds of question reached it;
- ``confidence``: how sure the write-time pass was (0 to 1);
- ``source_trust``: who said it (1 for the user's own words, less for an inference);
- ``stated``: how many times the user said it (1 for once);
- ``age_days``: how long it has stood without being contradicted.

The counted signals are what the record shows, not a model's judgement. The gate runs one of two ways:

- **blended**: each signal is mapped onto 0 to 1 (``normalised``) and the weighted mean is compared with
  ``threshold``;
- **k_of_n**: it fires when at least ``k`` of the raw signals reach their ``bars``. ``k = 1`` is "any single signal".

In both modes the candidate's **score** is the blended value: the number the gate reports is the number the
promoted memory starts its strength with, so what decided promotion is what ranks it later.

Plain floats and numpy only: the engine maps its profile onto ``GateParams``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
Mask = NDArray[np.bool_]

SIGNALS: tuple[str, ...] = ("retrievals", "query_kinds", "confidence", "source_trust", "stated", "age_days")
"""The columns of a signal vector, in order."""

Mode = Literal["blended", "k_of_n"]


@dataclass(frozen=True, slots=True)
class GateParams:
    """The gate's constants, one entry per signal where a tuple (in ``SIGNALS`` order)."""

    mode: Mode = "blended"
    threshold: float = 0.5
    weights: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    k: int = 3
    bars: tuple[float, ...] = (2.0, 2.0, 0.8, 1.0, 2.0, 7.0)
    retrieval_scale: float = 3.0
    query_kind_scale: float = 2.0
    stated_scale: float = 1.0
    age_scale_days: float = 14.0

    def __post_init__(self) -> None:
        n = len(SIGNALS)
        if self.mode not in ("blended", "k_of_n"):
            raise ValueError(f"mode must be 'blended' or 'k_of_n', got {self.mode!r}")
        if len(self.weights) != n or len(self.bars) != n:
            raise ValueError(f"weights and bars need one value per signal ({', '.join(SIGNALS)})")
        if any(not np.isfinite(w) or w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ValueError(f"weights must be finite, non-negative and not all 0, got {self.weights!r}")
        if not 1 <= self.k <= n:
            raise ValueError(f"k must be between 1 and {n}, got {self.k!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold!r}")
        for name in ("retrieval_scale", "query_kind_scale", "stated_scale", "age_scale_days"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")


@dataclass(frozen=True, slots=True)
class GateResult:
    score: F64
    """The blended score of each candidate, in [0, 1]: its starting strength if promoted."""
    passed: Mask
    """Whether each candidate clears the gate in the params' mode."""
    cleared: Mask
    """(n, 6): which signals reached their bars (what a k-of-n gate counts), for the explanation."""
    normalised: F64
    """(n, 6): each signal mapped onto [0, 1], what the blend averages."""


def normalised(signals: F64, params: GateParams) -> F64:
    """Each column onto [0, 1]: counts saturate (1 - exp(-x / scale)); confidence and trust are already there;
    ``stated`` counts the times beyond the first; age matures over ``age_scale_days``."""
    x = np.asarray(signals, dtype=np.float64).reshape(-1, len(SIGNALS))
    out = np.empty_like(x)
    out[:, 0] = 1.0 - np.exp(-np.maximum(x[:, 0], 0.0) / params.retrieval_scale)
    out[:, 1] = 1.0 - np.exp(-np.maximum(x[:, 1], 0.0) / params.query_kind_scale)
    out[:, 2] = np.clip(x[:, 2], 0.0, 1.0)
    out[:, 3] = np.clip(x[:, 3], 0.0, 1.0)
    out[:, 4] = 1.0 - np.exp(-np.maximum(x[:, 4] - 1.0, 0.0) / params.stated_scale)
    out[:, 5] = 1.0 - np.exp(-np.maximum(x[:, 5], 0.0) / params.age_scale_days)
    return out


def gate(signals: F64, params: GateParams) -> GateResult:
    """Score and decide every candidate (row) at once. Deterministic; no state."""
    x = np.asarray(signals, dtype=np.float64).reshape(-1, len(SIGNALS))
    if not np.all(np.isfinite(x)):
        raise ValueError("signal vectors must be finite")
    norm = normalised(x, params)
    weights = np.asarray(params.weights, dtype=np.float64)
    score = norm @ weights / weights.sum()
    cleared = x >= np.asarray(params.bars, dtype=np.float64)
    passed = score >= params.threshold if params.mode == "blended" else cleared.sum(axis=1) >= params.k
    return GateResult(score=score, passed=passed, cleared=cleared, normalised=norm)
