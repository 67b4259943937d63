"""The ledger's ports: the audit trail, the review queue, the recall log, resolutions, what erasure leaves
behind, and the partitions the sweep visits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from engine.domain.models import (
    AuditEvent,
    Decision,
    MemoryState,
    Resolution,
    ReviewItem,
    ReviewKind,
    TrustRecord,
)

# -- the ledger: apart from the memories it describes, and outliving them ----------------------------------------
# Ids, statuses, strengths, registers, times and proper names; what the user said only in the recall log, which
# erasure removes. ``partition`` is ``engine.domain.models.partition_key(character_id, user_id)``.


class AuditLog(Protocol):
    """The audit trail of every lifecycle change. It outlives the memories: erasure keeps that a memory existed."""

    def record(self, memory_id: str, partition: str, event: str, *, at: datetime, actor: str,
               status: str | None = None, strength: float | None = None, names: tuple[str, ...] = ()) -> None:
        """Append an event; of ``names`` only proper names ("Luna", never "dog") are kept."""
        ...

    def history(self, memory_id: str) -> list[AuditEvent]:
        """A memory's events, oldest first."""
        ...

    def partition_history(self, partition: str) -> list[AuditEvent]: ...

    def erased(self, memory_ids: Sequence[str]) -> set[str]:
        """The ids among ``memory_ids`` whose memory was erased."""
        ...

    def redact_names(self, memory_ids: list[str], *, strict: bool) -> None:
        """At erasure: the memories' events keep proper names only, or (``strict``) no names at all."""
        ...


class ReviewQueue(Protocol):
    """What consolidation proposed, and what a director decided."""

    def propose(self, kind: ReviewKind, *, partition: str, before: MemoryState, after: MemoryState, score: float,
                reason: str, at: datetime, change_kind: str = "", counterpart: str | None = None) -> ReviewItem:
        """File a pending item; ``change_kind`` defaults to ``kind``."""
        ...

    def item(self, item_id: str) -> ReviewItem:
        """NotFound for an unknown id."""
        ...

    def open_items(self, partitions: list[str] | None = None, *, decision: Decision | None = "pending",
                   limit: int = 100) -> list[ReviewItem]:
        """Items in proposal order, of ``partitions`` (None: every one) with ``decision`` (None: any)."""
        ...

    def is_pending(self, memory_id: str, kind: ReviewKind) -> bool: ...

    def decide(self, item_id: str, decision: Decision, *, by: str, at: datetime,
               applied: Sequence[MemoryState] = ()) -> ReviewItem:
        """Keep ``applied`` (the prior states of the other memories a keep changed) with a kept or auto_kept
        decision; a move back to pending clears them. A pending item is kept, rejected or auto_kept, a kept one
        reverted, an auto_kept one put back to pending (undone); InvalidInput for any other move. A person's kept,
        rejected and reverted count in the organisation's ``trust_record`` for the item's change kind, in the same
        write; auto_kept and its undoing
        never count."""
        ...

    def trust_record(self, org: str, change_kind: str) -> TrustRecord:
        """The organisation's human decisions on ``change_kind`` (org: the namespace prefix, ``"acme:"``, or ``""``);
        zeros when none were made."""
        ...

    def forget_items(self, memory_ids: Sequence[str]) -> int:
        """At erasure: remove the items about ``memory_ids`` (as their memory or their counterpart), wherever they
        are filed (a conflict ticket sits in the canon's queue); returns how many."""
        ...

    def forget_partition(self, partition: str) -> int:
        """At erasure: remove a partition's items; returns how many."""
        ...


class RecallLog(Protocol):
    """What the character saw on each turn, by recall id. It holds what the user said: erasure removes it."""

    def record_recall(self, recall_id: str, partition: str, at: datetime, body: str) -> None: ...

    def recall(self, recall_id: str, partition: str) -> str:
        """NotFound for an id unknown in ``partition``."""
        ...

    def forget_recalls(self, partition: str, memory_ids: list[str] | None = None) -> int:
        """Remove a partition's recalls, or only those that showed one of ``memory_ids``; returns how many."""
        ...

    def expire_recalls(self, *, before: datetime, max_bytes: int | None,
                       partition_prefix: str | None = None) -> int:
        """The retention, in one write transaction: remove every recall logged before ``before`` (its ``at``);
        then, when ``max_bytes`` is set, the oldest recalls left (by ``at``, then ``recall_id``) until the bodies
        left total at most ``max_bytes`` bytes (the UTF-8 length of each body as stored). With
        ``partition_prefix``, only recalls whose partition key starts with it are removed, by ``before`` alone:
        the size bound bounds the whole log, so it is not applied. Returns how many were removed."""
        ...


class ResolutionLog(Protocol):
    """Earlier tones settled by later memories (``traces.resolution``), and which a director undid."""

    def record_resolutions(self, partition: str, resolutions: Sequence[Resolution]) -> list[Resolution]:
        """Keep new resolutions, each audited; returns the new ones. A pair (memory, resolver) already recorded,
        undone or not, is left as it is."""
        ...

    def resolutions(self, partition: str, *, include_undone: bool = True) -> list[Resolution]:
        """A partition's resolutions, oldest first."""
        ...

    def resolutions_in_force(self, partition: str, at: datetime) -> dict[str, Resolution]:
        """By memory id, the earliest resolution not undone whose resolving memory was said by ``at``."""
        ...

    def undo_resolutions(self, partition: str, memory_ids: Sequence[str], *, by: str,
                         at: datetime) -> list[Resolution]:
        """Undo the resolutions in force of ``memory_ids``, each audited; NotFound when none has one."""
        ...

    def forget_resolutions(self, partition: str, memory_ids: Sequence[str] | None = None) -> int:
        """At erasure: a partition's resolutions, or those naming one of ``memory_ids`` (either side)."""
        ...


class ErasureLog(Protocol):
    """What erasure leaves behind so that nothing erased comes back: tombstones of turns, suppressed facts."""

    def tombstone_turns(self, partition: str, turn_ids: Sequence[str], *, at: datetime) -> None: ...

    def erased_turns(self, turn_ids: Sequence[str]) -> set[str]:
        """The ids among ``turn_ids`` whose turn was erased (a retried batch gets a 410, not a second copy)."""
        ...

    def suppress(self, fact_id: str, sources: Sequence[str]) -> None:
        """A fact erased on its own: it must not be distilled again from the same memories."""
        ...

    def suppressed(self, fact_id: str, sources: Sequence[str]) -> bool: ...

    def purge(self) -> None:
        """Make what was deleted unrecoverable from the ledger's own files; BackendUnavailable when it cannot."""
        ...


class PartitionRegistry(Protocol):
    """The partitions the nightly sweep visits."""

    def touch(self, character_id: str, user_id: str) -> None: ...

    def partitions(self) -> list[tuple[str, str]]:
        """(character id, user id) pairs, sorted."""
        ...

    def untouch(self, character_id: str, user_id: str) -> None: ...


class Ledger(AuditLog, ReviewQueue, RecallLog, ResolutionLog, ErasureLog, PartitionRegistry, Protocol):
    """All of the ledger, in one store: what the engine's services are given (each uses the parts it names)."""

    def ping(self) -> None:
        """Raises (BackendUnavailable) unless the ledger answers: a readiness check."""
        ...

    def restore_partition(self, partition: str, *, audit: Sequence[AuditEvent], resolutions: Sequence[Resolution],
                          review_items: Sequence[ReviewItem]) -> dict[str, int]:
        """An import: keep these records of ``partition`` exactly as given (ids, times, decisions), with no event
        of their own, in one transaction; a record already held (the same audit event, resolution pair or item
        id) is left as it is. Returns how many of each were added."""
        ...

    def close(self) -> None: ...
