"""Domain models: what the engine stores and what recall answers.

Models that cross a boundary (requests, stored records, recall results) forbid unknown fields, so a typo in a
caller's payload is an error that names the field rather than a silently ignored key. Numbers carry their unit
or range in the name or the field description.

One module a concept: ``records`` (what is stored), ``recall`` (the full answer), ``ledger`` (audit and review).
Every name is importable from here. The compact recall a runtime reads is the API's view of the full answer
(``api/compact.py``).
"""

from __future__ import annotations

from engine.domain.models.ledger import (
    AuditEvent,
    Decision,
    ReviewItem,
    ReviewKind,
    partition_key,
)
from engine.domain.models.recall import (
    WINDOW_MAX_TURNS,
    AssembledContext,
    Candidate,
    ContextTrace,
    Leg,
    RecalledMemory,
    RecallMode,
    RecallQuery,
    RecallResult,
    RecallTrace,
    ScoreComponents,
    Tier,
    ToneConstraint,
    WindowTurn,
)
from engine.domain.models.records import (
    IDENTIFIER_MAX_CHARS,
    IDENTIFIER_PATTERN,
    NAMESPACE_MAX_CHARS,
    REGISTERS,
    AwareDatetime,
    CloseReport,
    ExtractedFact,
    FactInfo,
    Frozen,
    Identifier,
    IngestReport,
    Memory,
    MemoryKind,
    MemoryState,
    NamespacedIdentifier,
    Partition,
    RecordKind,
    Register,
    Resolution,
    Role,
    Scope,
    Source,
    Status,
    StrengthSignals,
    Trace,
    TraceStatus,
    Turn,
)

__all__ = [
    "IDENTIFIER_MAX_CHARS",
    "IDENTIFIER_PATTERN",
    "NAMESPACE_MAX_CHARS",
    "REGISTERS",
    "WINDOW_MAX_TURNS",
    "AssembledContext",
    "AuditEvent",
    "AwareDatetime",
    "Candidate",
    "CloseReport",
    "ContextTrace",
    "Decision",
    "ExtractedFact",
    "FactInfo",
    "Frozen",
    "Identifier",
    "IngestReport",
    "Leg",
    "Memory",
    "MemoryKind",
    "MemoryState",
    "NamespacedIdentifier",
    "Partition",
    "RecallMode",
    "RecallQuery",
    "RecallResult",
    "RecallTrace",
    "RecalledMemory",
    "RecordKind",
    "Register",
    "Resolution",
    "ReviewItem",
    "ReviewKind",
    "Role",
    "Scope",
    "ScoreComponents",
    "Source",
    "Status",
    "StrengthSignals",
    "Tier",
    "ToneConstraint",
    "Trace",
    "TraceStatus",
    "Turn",
    "WindowTurn",
    "partition_key",
]
