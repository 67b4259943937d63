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


ReviewKind = Literal["promote", "demote"]
Decision = Literal["pending", "kept", "rejected", "reverted"]
"""pending: proposed, nothing applied. kept: applied. rejected: dropped unapplied. reverted: applied, then undone
back to the exact prior state."""


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
