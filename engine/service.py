"""The engine facade: ingest, close a session (the write-time pass), recall. The API and eval call only this."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from engine.ingest import Ingestor
from engine.models import CloseReport, IngestReport, RecallQuery, RecallResult, Turn
from engine.ports import Classifier, Embedder, MemoryStore
from engine.recall import Recaller
from engine.tuning import ProfileSource
from engine.writer import TraceWriter


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

    def recall(self, query: RecallQuery) -> RecallResult:
        return self._recaller.recall(query)

    def close(self) -> None:
        self.store.close()
