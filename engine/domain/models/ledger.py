"""The ledger's records (``engine.domain.ports.Ledger``): audit events and review items."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from engine.domain.models.records import (
    MemoryState,
)

# -- the ledger's records (``engine.domain.ports.Ledger``) ----------------------------------------------------

def partition_key(character_id: str, user_id: str) -> str:
    """A partition as the ledger keys it."""
    return f"{character_id}\x1f{user_id}"


ReviewKind = Literal["promote", "demote", "conflict", "contradiction"]
"""promote: a provisional fact that cleared the consolidation gate goes active. demote: a low-value memory recall keeps
returning is weakened. conflict: a user's fact on a slot the character's canon holds (kept: it stands for that user).
contradiction: a later fact contradicts a rehearsed memory (kept: the new fact replaces it)."""
Decision = Literal["pending", "kept", "rejected", "reverted", "auto_kept"]
"""pending: proposed, nothing applied. kept: applied by a person. rejected: dropped unapplied. reverted: applied,
then undone back to the exact prior state. auto_kept: applied on the organisation's earned trust, without a person;
undoing it restores the prior state and puts the item back to pending."""


class AuditEvent(BaseModel):
    """One lifecycle change of a memory: ids, statuses, strengths and (unless a strict erasure dropped them)
    proper names; never content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    partition: str
    event: str
    at: datetime
    status: str | None
    strength: float | None
    names: tuple[str, ...] | None
    actor: str


    def identity(self) -> tuple[object, ...]:
        """What makes two events of one partition the same event (an import keeps each once): all but the
        partition, the time in UTC."""
        return (self.memory_id, self.event, self.at.astimezone(UTC).isoformat(), self.status, self.strength,
                self.names, self.actor)

class ReviewSide(BaseModel):
    """One side of a conflict or a contradiction, as the review queue shows it (read from the store, not the
    ledger, which keeps no content)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    scope: str
    text: str


class ReviewItem(BaseModel):
    """A change consolidation proposed, with the states before and after, and what a director decided."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    kind: ReviewKind
    memory_id: str
    partition: str
    proposed_at: datetime
    score: float
    reason: str
    before: MemoryState
    after: MemoryState
    decision: Decision
    decided_at: datetime | None
    decided_by: str | None
    change_kind: str = ""  # what earned trust is counted by: "promote:diet", "demote"
    counterpart: str | None = None  # the other side: a conflict's canon fact, a contradiction's rehearsed memory
    # the prior states of the other memories a keep changed (a promotion's supersession): a revert or an undo
    # restores them with ``before``, exactly
    applied: tuple[MemoryState, ...] = ()
    sides: tuple[ReviewSide, ...] = ()  # read time only (never stored): both sides' words, for the director


class TrustRecord(BaseModel):
    """An organisation's record of human decisions on one kind of change (``ReviewItem.change_kind``). Automatic
    keeps are never counted, so the trust it earns is never its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    org: str
    change_kind: str
    kept: int = 0
    rejected: int = 0
    reverted: int = 0

    @property
    def held(self) -> int:
        """Kept by a person and not reverted since."""
        return self.kept - self.reverted

    @property
    def rate(self) -> float:
        """Of the proposals a person decided, the share kept and still kept; 0 before any decision."""
        decided = self.kept + self.rejected
        return self.held / decided if decided else 0.0
