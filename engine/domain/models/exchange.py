"""The export document: everything held about one user with one character, in one versioned format.

``UserExport`` is the whole document (``GET /v1/users/{user_id}/export``, JSON); ``ExportRecord`` one line of
its NDJSON form (a ``header``, then one line a record, then an ``end`` with the counts), which streams a large
partition without holding it. Both carry the same records. Version 1:

- ``sessions``: each session of the partition, and whether it was closed (its write-time pass recorded);
- ``turns``: every turn said, the user's and the character's, with the runtime's ids and times;
- ``memories``: each memory (turn memories and atomic facts, current and superseded: a fact's history is its
  chain of ``state.superseded_by``) with its write-time trace and its lifecycle state (status, pins, strength
  signals);
- ``resolutions``: earlier anxiety or anger settled by a later memory, undone ones too;
- ``review_items``: what consolidation proposed for these memories, and what a director decided;
- ``audit``: the audit trail (ids, events, times, actors, proper names at most);
- ``tone_rules``: the standing tone rules in force at ``exported_at``, derived from the traces (an import
  recomputes them rather than reading them).

No vectors: they are derived from the words, and an import embeds again with its own model. The partition is
implied by ``character_id`` and ``user_id``, so records carry no partition key of their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict

from engine.domain.models.ledger import Decision, ReviewKind
from engine.domain.models.recall import ToneConstraint
from engine.domain.models.records import Memory, MemoryState, Resolution, Trace, Turn

EXPORT_FORMAT: Literal["feltsense.export"] = "feltsense.export"
EXPORT_VERSION: Literal[1] = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExportedSession(_Record):
    session_id: str
    closed: bool


class ExportedMemory(_Record):
    memory: Memory
    trace: Trace | None
    state: MemoryState | None


class ExportedAudit(_Record):
    memory_id: str
    event: str
    at: AwareDatetime
    status: str | None
    strength: float | None
    names: tuple[str, ...] | None
    actor: str


class ExportedReview(_Record):
    item_id: str
    kind: ReviewKind
    memory_id: str
    proposed_at: AwareDatetime
    score: float
    reason: str
    before: MemoryState
    after: MemoryState
    decision: Decision
    decided_at: AwareDatetime | None
    decided_by: str | None


class UserExport(_Record):
    format: Literal["feltsense.export"] = EXPORT_FORMAT
    version: Literal[1] = EXPORT_VERSION
    exported_at: AwareDatetime
    character_id: str
    user_id: str
    sessions: tuple[ExportedSession, ...]
    turns: tuple[Turn, ...]
    memories: tuple[ExportedMemory, ...]
    resolutions: tuple[Resolution, ...]
    review_items: tuple[ExportedReview, ...]
    audit: tuple[ExportedAudit, ...]
    tone_rules: tuple[ToneConstraint, ...]


RecordKind = Literal["session", "turn", "memory", "resolution", "review_item", "audit", "tone_rule"]
SECTIONS: dict[RecordKind, str] = {
    "session": "sessions", "turn": "turns", "memory": "memories", "resolution": "resolutions",
    "review_item": "review_items", "audit": "audit", "tone_rule": "tone_rules",
}
"""Each NDJSON record kind and the document's section it belongs to, in the order they are written."""


def grouped(records: Iterable[tuple[RecordKind, Any]]) -> dict[str, list[Any]]:
    """Records, each with its kind, in the document's sections (every section present), in the order given."""
    sections: dict[str, list[Any]] = {section: [] for section in SECTIONS.values()}
    for kind, record in records:
        sections[SECTIONS[kind]].append(record)
    return sections
