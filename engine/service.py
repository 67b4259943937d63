"""The engine facade: ingest, close a session (the write-time pass), recall. The API and eval call only this."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from engine.errors import NotFound
from engine.ingest import Ingestor
from engine.models import CloseReport, IngestReport, Memory, Partition, RecallQuery, RecallResult, Trace, Turn
from engine.ports import Classifier, Embedder, MemoryStore
from engine.recall import Recaller
from engine.tuning import ProfileSource
from engine.writer import TraceWriter

log = logging.getLogger("feltsense.engine")


def utc_now() -> datetime:
    return datetime.now(UTC)


class Engine:
    """One engine over one store. Thread-safe for concurrent recalls; writes are serialised by the store."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        classifier: Classifier,
        profiles: ProfileSource | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.classifier = classifier
        self.profiles = profiles or ProfileSource()
        self.clock = clock
        self._ingestor = Ingestor(store=store, embedder=embedder)
        self._writer = TraceWriter(
            store=store, classifier=classifier, embedder=embedder, profiles=self.profiles, clock=clock
        )
        self._recaller = Recaller(store=store, embedder=embedder, profiles=self.profiles, clock=clock)
        self._write_lock = threading.Lock()

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        """Append turns idempotently (a turn id seen before is not stored again) and index the user turns."""
        with self._write_lock:
            return self._ingestor.ingest(turns)

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> CloseReport:
        """Run the write-time pass over a session's memories. A classifier failure leaves traces pending."""
        with self._write_lock:
            return self._writer.close_session(session_id, closed_at=closed_at or self.clock())

    def retry_pending(self) -> int:
        """Retry the write-time pass for closed sessions with pending traces; returns traces completed."""
        with self._write_lock:
            return self._writer.retry_pending()

    def backfill_vectors(self, limit: int = 256) -> int:
        """Embed memories stored while the embedder was down; returns how many got vectors."""
        with self._write_lock:
            return self._ingestor.backfill(limit)

    def background_pass(self) -> dict[str, int]:
        """What the background loop runs: backfill vectors, then retry pending traces. Never raises."""
        done = {"vectors": 0, "traces": 0}
        for key, job in (("vectors", self.backfill_vectors), ("traces", self.retry_pending)):
            try:
                done[key] = job()
            except Exception as exc:  # a provider still down: try again next time
                log.warning("background %s pass failed: %s", key, exc)
        return done

    def memories(self, partition: Partition, *, offset: int, limit: int) -> list[tuple[Memory, Trace | None]]:
        """One partition's memories with their traces, in ingest order, a page at a time."""
        found = self.store.list_memories(partition, offset=offset, limit=limit)
        traces = self.store.get_traces([m.memory_id for m in found])
        return [(m, traces.get(m.memory_id)) for m in found]

    def memory(self, memory_id: str, partition: Partition) -> tuple[Memory, Trace | None]:
        """One memory with its trace; NotFound unless it belongs to ``partition`` (never reveal another's)."""
        found = self.store.get_memories([memory_id])
        if not found or found[0].partition != partition:
            raise NotFound(f"no memory {memory_id!r}")
        return found[0], self.store.get_traces([memory_id]).get(memory_id)

    def forget(self, memory_id: str, partition: Partition) -> None:
        """Delete one memory, its trace, vector and lexical entries; NotFound unless it is ``partition``'s."""
        self.memory(memory_id, partition)
        with self._write_lock:
            self.store.delete_memories([memory_id])

    def recall(self, query: RecallQuery) -> RecallResult:
        return self._recaller.recall(query)

    def close(self) -> None:
        self.store.close()
