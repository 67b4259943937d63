"""The write-time service: runs ``traces.write_pass`` when a session closes, and retries what failed.

A classifier or extractor failure never loses a memory: the memories are already stored, and their traces are
written as pending (with the error and the attempt count), to be retried by ``retry_pending``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.errors import NotFound
from engine.facts import FactService
from engine.models import CloseReport, Memory, Partition, Trace, TraceStatus
from engine.ports import Classifier, Embedder, MemoryStore
from engine.tuning import ProfileSource
from traces.facts import extract
from traces.write_pass import build_traces

log = logging.getLogger("feltsense.writer")


class TraceWriter:
    def __init__(
        self,
        *,
        store: MemoryStore,
        classifier: Classifier,
        embedder: Embedder,
        profiles: ProfileSource,
        clock: Callable[[], datetime],
        facts: FactService,
        publish: Callable[[Partition], AbstractContextManager[None]] = lambda partition: nullcontext(),
    ) -> None:
        self._facts = facts
        self._publish = publish  # held while a session's traces and facts are written: recall sees all or none
        self._store = store
        self._embedder = embedder
        self._classifier = classifier
        self._profiles = profiles
        self._clock = clock

    def close_session(self, session_id: str, *, closed_at: datetime) -> CloseReport:
        turns = self._store.get_turns(session_id)
        if not turns:
            raise NotFound(f"no session {session_id!r}")
        self._store.mark_session_closed(session_id, closed_at)
        return self._write(session_id, written_at=closed_at)

    def accept_close(self, session_id: str, *, closed_at: datetime) -> None:
        if not self._store.get_turns(session_id):
            raise NotFound(f"no session {session_id!r}")
        self._store.mark_session_closed(session_id, closed_at)
        memories = self._store.session_memories(session_id)
        traced = self._store.get_traces([m.memory_id for m in memories])
        self._store.put_traces([
            Trace(memory_id=m.memory_id, status=TraceStatus.PENDING, written_at=closed_at,
                  last_error="queued: the write-time pass has not run yet")
            for m in memories if m.memory_id not in traced
        ])

    def retry_pending(self) -> int:
        completed = 0
        for session_id in self._store.pending_sessions():
            completed += self._write(session_id, written_at=self._clock(), retry=True).traces_written
        return completed

    def _vectors(self, memories: list[Memory]) -> NDArray[np.float32]:
        """The memories' vectors, embedding now any that were stored while the embedder was down."""
        vectors = self._store.get_vectors([m.memory_id for m in memories])
        missing = np.flatnonzero(np.isnan(vectors).any(axis=1))
        if len(missing):
            fresh = self._embedder.embed([memories[i].text for i in missing])
            self._store.set_vectors([memories[i].memory_id for i in missing], fresh)
            vectors[missing] = fresh
        return vectors

    def _write(self, session_id: str, *, written_at: datetime, retry: bool = False) -> CloseReport:
        memories = self._store.session_memories(session_id)
        if not memories:
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)
        existing = self._store.get_traces([m.memory_id for m in memories])
        if all(t.status is TraceStatus.COMPLETE for t in existing.values()) and len(existing) == len(memories):
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)
        profile = self._profiles.profile_for(memories[0].character_id)
        attempts = 1 + max((t.attempts for t in existing.values() if t.status is TraceStatus.PENDING), default=0)
        if retry and attempts > profile.write.max_attempts:
            # Exhausted: left pending for an operator (or an explicit close) rather than retried forever.
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=len(memories))
        try:
            traces = build_traces(
                memories,
                self._store.get_turns(session_id),
                self._vectors(memories),
                self._classifier,
                profile.write,
                written_at=written_at,
                attempts=attempts,
                embed=self._embedder.embed,
            )
        except Exception as exc:  # any classifier failure: keep the memories, mark their traces pending
            log.warning("write-time pass failed for session %s (attempt %d): %s", session_id, attempts, exc)
            pending = [
                Trace(memory_id=m.memory_id, status=TraceStatus.PENDING, written_at=written_at,
                      attempts=attempts, last_error=f"{type(exc).__name__}: {exc}"[:500])
                for m in memories
                if not (m.memory_id in existing and existing[m.memory_id].status is TraceStatus.COMPLETE)
            ]
            self._store.put_traces(pending)
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=len(pending))
        with self._publish(memories[0].partition):
            self._store.put_traces(traces)
            self._write_facts(memories, traces)
        return CloseReport(session_id=session_id, traces_written=len(traces), traces_pending=0)

    def _write_facts(self, memories: list[Memory], traces: list[Trace]) -> None:
        """The session's atomic facts, in the order they were said, each at the time it was said: a later
        statement on the same slot supersedes an earlier one. Status follows the relation's policy (the system
        extracted them; the user stated them). Idempotent: a retried session writes the same fact ids."""
        by_id = {t.memory_id: t for t in traces}
        for memory in memories:
            trace = by_id.get(memory.memory_id)
            found = {(f.subject, f.relation, f.value): f for f in
                     [*extract(memory.text), *(trace.extracted if trace is not None else ())]}
            for fact in found.values():
                self._facts.write(fact, scope="user", character_id=memory.character_id, user_id=memory.user_id,
                                  actor="system", source="user_stated", at=memory.created_at,
                                  session_id=memory.session_id, provenance=(memory.memory_id,))
