"""Ports: the narrow, batch-first interfaces the services depend on. Adapters implement them structurally.

One module a concern: ``memory`` (the memory store's turn log, records, traces, search index and states),
``providers`` (the embedder and the classifier), ``ledger`` (audit, review, recall log, resolutions, erasure,
partitions) and ``control`` (tuning profiles, API key records). Every name is importable from here."""

from __future__ import annotations

from engine.domain.ports.control import KeyRecord, KeyRecords, NoChange, Profiles, ProfileStore, TuningVersion
from engine.domain.ports.ledger import (
    AuditLog,
    ErasureLog,
    Ledger,
    PartitionRegistry,
    RecallLog,
    ResolutionLog,
    ReviewQueue,
)
from engine.domain.ports.memory import (
    LegScores,
    MemoryRecords,
    MemoryStore,
    SearchIndex,
    SearchRequest,
    StateRecords,
    ToneCandidates,
    TraceRecords,
    TurnLog,
)
from engine.domain.ports.providers import Classifier, Embedder, TraceClassification

__all__ = [
    "AuditLog",
    "Classifier",
    "Embedder",
    "ErasureLog",
    "KeyRecord",
    "KeyRecords",
    "Ledger",
    "LegScores",
    "MemoryRecords",
    "MemoryStore",
    "NoChange",
    "PartitionRegistry",
    "ProfileStore",
    "Profiles",
    "RecallLog",
    "ResolutionLog",
    "ReviewQueue",
    "SearchIndex",
    "SearchRequest",
    "StateRecords",
    "ToneCandidates",
    "TraceClassification",
    "TraceRecords",
    "TuningVersion",
    "TurnLog",
]
