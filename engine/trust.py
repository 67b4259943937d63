"""Earned trust (seed 000, "trust calibration"): the sweep may keep a routine kind of change itself once the
organisation's people have kept that kind often enough and reverted it rarely enough.

- The record is per organisation (the namespace) and per **change kind**: ``demote``, or ``promote:<relation>``
  (promoting a diet is not promoting a name). The ledger keeps it (``Ledger.trust_record``), counting only a
  person's keeps, rejections and reverts, in the same write as the decision: an automatic keep, and undoing one,
  never count, so the trust is never its own evidence.
- The bar is the character's profile's (``trust``): at least ``auto_keep_after`` held keeps (kept and not reverted),
  and a held share of the decided (kept + rejected) of at least ``min_keep_rate``. ``auto_keep_after = 0`` is off.
- Only the kinds in ``trust.kinds`` ever qualify: a conflict with canon and the contradiction of a rehearsed memory
  are always a person's.
- An automatic keep is applied exactly as a person's keep, marked ``auto_kept`` (decided by ``trust``), audited as
  such, and undoable one by one: undoing restores the prior state exactly and puts the item back in the queue.
"""

from __future__ import annotations

from engine.domain.models import Memory, ReviewKind, TrustRecord
from engine.domain.tuning import TrustParams

ACTOR = "trust"
"""Who an automatic keep is decided by, in the queue and the audit trail."""


def change_kind(kind: ReviewKind, memory: Memory) -> str:
    """What a change is counted as: a promotion by its fact's relation, anything else by its kind."""
    if kind == "promote" and memory.fact is not None:
        return f"promote:{memory.fact.relation}"
    return kind


def earned(record: TrustRecord, kind: ReviewKind, params: TrustParams) -> bool:
    """Whether changes of ``record``'s kind are kept without a person now."""
    return (kind in params.kinds and params.auto_keep_after > 0 and record.held >= params.auto_keep_after
            and record.rate >= params.min_keep_rate)
