"""The per-character tuning profile: every constant that shapes retrieval, ranking and tone.

Creative directors tune these, not engineers, so each one is validated, documented here with its default, and
carries its unit in its name. Nothing in ``scoring/`` or the services hard-codes a constant that belongs here.

Each constant says twice what it does: its ``description`` is the engineer's note (the formula, the measurement
behind the default), and its ``Shown`` the creative director's (a plain-language label and help). The tuning page
reads the second from ``GET /v1/tuning/defaults``; nothing else keeps labels.

One module a concept: ``shown`` (``Shown``, ``tunable`` and the shared texts), ``calibration`` (the measured
defaults), ``sections`` (the ten sections and their constants) and ``profile`` (the whole profile and
``ProfileSource``). The sections, the profile, ``Shown`` and ``tunable`` are importable from here; the shared
texts and the measured defaults from their modules.
"""

from __future__ import annotations

from engine.domain.tuning.profile import ProfileSource, TuningProfile
from engine.domain.tuning.sections import (
    ConsolidationParams,
    ContextParams,
    RehearsalParams,
    RetrievalParams,
    ScopeParams,
    ScoringParams,
    StrengthParams,
    ToneParams,
    TrustParams,
    WriteParams,
)
from engine.domain.tuning.shown import Shown, tunable

__all__ = [
    "ConsolidationParams",
    "ContextParams",
    "ProfileSource",
    "RehearsalParams",
    "RetrievalParams",
    "ScopeParams",
    "ScoringParams",
    "Shown",
    "StrengthParams",
    "ToneParams",
    "TrustParams",
    "TuningProfile",
    "WriteParams",
    "tunable",
]
