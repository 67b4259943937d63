"""The write-time service: runs ``traces.write_pass`` when a session closes, and retries what failed.

A classifier or extractor failure never loses a memory: the memories are already stored, and their traces are
written as pending (with the error and the attempt count), to be retried by ``retry_pending``.

Once a session's traces are built, its memories that read as resolution ("the scan came back clear", see
``traces.resolution``) are matched against the user's earlier memories whose anxiety or anger is still in tone
force (toned, not resolved, not decayed below the standing threshold), across sessions; what they resolve is
written on the resolving memory's trace (``Trace.resolves``) and recorded in the ledger, in the same publish step
as the traces, so recall sees the traces and the resolutions together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import BackendUnavailable, NotFound
from engine.domain.models import (
    CloseReport,
    Memory,
    MemoryKind,
    Partition,
    Resolution,
    Trace,
    TraceStatus,
    partition_key,
)
from engine.domain.ports import Classifier, Embedder, MemoryStore, Profiles, ResolutionLog
from engine.domain.scopes import partition_for
from engine.domain.tuning import TuningProfile, WriteParams
from engine.facts import FactService, ends_another
from engine.strength import stage_two_params
from scoring.rerank import salience_for
from traces.anchors import lookup_words
from traces.facts import ends_slot, extract
from traces.resolution import InForce, Resolver, common_terms, link_resolutions
from traces.write_pass import build_traces

log = logging.getLogger("feltsense.writer")
EARLIER_WORDS = 24
"""At most this many of a session's words are looked up among the user's earlier turns (``_earlier_texts``)."""
EARLIER_PER_WORD = 3
"""Earlier turns kept per word: one is enough to make a repeat, a few guard against substring matches."""


@dataclass(frozen=True)
class Prepared:
    """A session's traces built ahead of its close (``TraceWriter.prepare``), with what they were built from; the
    exception instead when building them failed."""

    memories: list[Memory]
    existing: dict[str, Trace]
    write: WriteParams
    attempts: int
    written_at: datetime
    traces: list[Trace] | Exception

    def holds(self, memories: list[Memory], existing: dict[str, Trace], write: WriteParams, attempts: int,
              written_at: datetime) -> bool:
        """Whether these traces are still the ones to write: the same memories, traces, settings and time."""
        return (self.memories == memories and self.existing == existing and self.write == write
                and self.attempts == attempts and self.written_at == written_at)


class TraceWriter:
    def __init__(
        self,
        *,
        store: MemoryStore,
        classifier: Classifier,
        embedder: Embedder,
        profiles: Profiles,
        clock: Callable[[], datetime],
        facts: FactService,
        publish: Callable[[Partition], AbstractContextManager[None]] = lambda partition: nullcontext(),
        ledger: ResolutionLog | None = None,
    ) -> None:
        self._facts = facts
        self._ledger = ledger  # where resolutions are recorded; None: resolutions are not looked for
        self._publish = publish  # held while a session's traces and facts are written: recall sees all or none
        self._store = store
        self._embedder = embedder
        self._classifier = classifier
        self._profiles = profiles
        self._clock = clock

    def prepare(self, session_id: str, *, closed_at: datetime) -> Prepared | None:
        """The costly, read-only part of closing ``session_id`` (the classification and anchors of
        ``build_traces``), computed without the engine's write lock so ingest and other closes go on meanwhile.
        ``close_session`` uses it only if nothing it was computed from has changed since; None when there is
        nothing to write."""
        memories = self._store.session_memories(session_id)
        if not memories:
            return None
        existing = self._store.get_traces([m.memory_id for m in memories])
        if self._done(memories, existing):
            return None
        profile = self._profiles.profile_for(memories[0].character_id)
        attempts = self._attempts(existing)
        try:
            return Prepared(memories, existing, profile.write, attempts, closed_at,
                            self._build(session_id, memories, profile, closed_at, attempts))
        except Exception as exc:  # written as pending by ``close_session``, as a failure under the lock would be
            return Prepared(memories, existing, profile.write, attempts, closed_at, exc)

    def close_session(self, session_id: str, *, closed_at: datetime, prepared: Prepared | None = None) -> CloseReport:
        turns = self._store.get_turns(session_id)
        if not turns:
            raise NotFound(f"no session {session_id!r}")
        self._store.mark_session_closed(session_id, closed_at)
        return self._write(session_id, written_at=closed_at, prepared=prepared)

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
            try:
                completed += self._write(session_id, written_at=self._clock(), retry=True).traces_written
            except BackendUnavailable as exc:
                self.leave_pending(session_id, exc)
                raise
        return completed

    def leave_pending(self, session_id: str, error: BackendUnavailable) -> None:
        """A pass cut short by an outage may have stored its traces, complete, before its resolutions and facts
        (the ledger): its retry would find the session done and never write them. Its traces go back to pending,
        so the next close, or the background retry, runs the whole pass again (it rewrites the same resolutions
        and facts)."""
        try:
            memories = self._store.session_memories(session_id)
            traces = self._store.get_traces([m.memory_id for m in memories])
            reason = f"the write-time pass was cut short: {type(error).__name__}: {error}"[:500]
            self._store.put_traces([
                traces[m.memory_id].model_copy(update={"status": TraceStatus.PENDING, "last_error": reason})
                if m.memory_id in traces else
                Trace(memory_id=m.memory_id, status=TraceStatus.PENDING, written_at=self._clock(), last_error=reason)
                for m in memories
            ])
        except Exception as exc:  # the store is down too: its traces were not written complete either
            log.warning("session %s: its traces could not be left pending after %s: %s", session_id, error, exc)

    def _vectors(self, memories: list[Memory]) -> NDArray[np.float32]:
        """The memories' vectors, embedding now any that were stored while the embedder was down."""
        vectors = self._store.get_vectors([m.memory_id for m in memories])
        missing = np.flatnonzero(np.isnan(vectors).any(axis=1))
        if len(missing):
            fresh = self._embedder.embed([memories[i].text for i in missing])
            self._store.set_vectors([memories[i].memory_id for i in missing], fresh)
            vectors[missing] = fresh
        return vectors

    @staticmethod
    def _done(memories: list[Memory], existing: dict[str, Trace]) -> bool:
        return len(existing) == len(memories) and all(t.status is TraceStatus.COMPLETE for t in existing.values())

    @staticmethod
    def _attempts(existing: dict[str, Trace]) -> int:
        return 1 + max((t.attempts for t in existing.values() if t.status is TraceStatus.PENDING), default=0)

    def _build(self, session_id: str, memories: list[Memory], profile: TuningProfile, written_at: datetime,
               attempts: int) -> list[Trace]:
        return build_traces(
            memories,
            self._store.get_turns(session_id),
            self._vectors(memories),
            self._classifier,
            profile.write,
            written_at=written_at,
            attempts=attempts,
            embed=self._embedder.embed,
            earlier=self._earlier_texts(session_id, memories),
        )

    def _write(self, session_id: str, *, written_at: datetime, retry: bool = False,
               prepared: Prepared | None = None) -> CloseReport:
        memories = self._store.session_memories(session_id)
        if not memories:
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)
        existing = self._store.get_traces([m.memory_id for m in memories])
        if self._done(memories, existing):
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)
        profile = self._profiles.profile_for(memories[0].character_id)
        attempts = self._attempts(existing)
        if retry and attempts > profile.write.max_attempts:
            # Exhausted: left pending for an operator (or an explicit close) rather than retried forever.
            return CloseReport(session_id=session_id, traces_written=0, traces_pending=len(memories))
        try:
            if prepared is not None and prepared.holds(memories, existing, profile.write, attempts, written_at):
                if isinstance(prepared.traces, Exception):
                    raise prepared.traces
                traces = prepared.traces
            else:  # nothing prepared, or the session changed since (a late turn, an erasure, another pass)
                traces = self._build(session_id, memories, profile, written_at, attempts)
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
        traces, resolutions = self._resolutions(memories, traces, profile, written_at)
        with self._publish(memories[0].partition):
            self._store.put_traces(traces)
            if resolutions and self._ledger is not None:
                partition = memories[0].partition
                self._ledger.record_resolutions(partition_key(partition.character_id, partition.user_id),
                                                resolutions)
            self._write_facts(memories, traces)
        return CloseReport(session_id=session_id, traces_written=len(traces), traces_pending=0)

    def _common_terms(self, partition: Partition) -> frozenset[str]:
        """Words most of the user's memories contain (a name every turn starts with): they link nothing."""
        texts: list[str] = []
        offset = 0
        while page := self._store.list_memories(partition, offset=offset, limit=500):
            offset += len(page)
            texts += [m.text for m in page if m.kind == "turn"]
        return common_terms(texts)

    def _resolutions(self, memories: list[Memory], traces: list[Trace], profile: TuningProfile,
                     written_at: datetime) -> tuple[list[Trace], list[Resolution]]:
        """What this session's resolving memories resolve (``traces.resolution``): the user's earlier memories,
        of this session or before, whose tone is in force (toned, not resolved yet) in a resolvable register.
        Returns the traces, the resolving ones with ``resolves`` filled in, and the resolutions to record."""
        if self._ledger is None or not any(t.resolution_cue for t in traces):
            return traces, []
        tone, write = profile.tone, profile.write
        partition = memories[0].partition
        resolvable = set(write.resolvable_registers)
        session_ids = {m.memory_id for m in memories}
        done = set(self._ledger.resolutions_in_force(partition_key(partition.character_id, partition.user_id),
                                                     max(m.created_at for m in memories)))
        found = self._store.tone_candidates(partition, min_intensity=tone.min_intensity, max_valence=tone.max_valence)
        earlier_ids = [m for m in found.memory_ids if m not in session_ids]
        earlier_traces = self._store.get_traces(earlier_ids)
        wanted = [m for m in earlier_ids if m not in done and (t := earlier_traces.get(m)) is not None
                  and t.register in resolvable]
        earlier_memories = {m.memory_id: m for m in self._store.get_memories(wanted)}
        wanted = [m for m in wanted if m in earlier_memories]
        # Still in force when the news comes: a worry that has decayed out of force needs no resolving, and the
        # older the memory, the likelier a shared word is a coincidence.
        news_at = min(m.created_at for m, t in zip(memories, traces, strict=True) if t.resolution_cue)
        ages = np.array([(news_at - earlier_memories[m].created_at).total_seconds() / 86400.0 for m in wanted])
        salience, _ = salience_for(np.array([earlier_traces[m].intensity for m in wanted]), ages,
                                   np.ones(len(wanted), dtype=bool), stage_two_params(profile))
        wanted = [m for m, level in zip(wanted, salience.tolist(), strict=True)
                  if level >= tone.standing_rule_salience]
        session_vectors = self._store.get_vectors([m.memory_id for m in memories])
        earlier_vectors = self._store.get_vectors(wanted)
        candidates = [
            InForce(memory_id=m, text=earlier_memories[m].text, created_at=earlier_memories[m].created_at,
                    session_id=earlier_memories[m].session_id, register=earlier_traces[m].register,
                    anchors=earlier_traces[m].anchors, vector=earlier_vectors[i])
            for i, m in enumerate(wanted)
        ]
        candidates += [  # this session's own toned memories: worry early in a session, good news later
            InForce(memory_id=m.memory_id, text=m.text, created_at=m.created_at, session_id=m.session_id,
                    register=t.register, anchors=t.anchors, vector=session_vectors[i])
            for i, (m, t) in enumerate(zip(memories, traces, strict=True))
            if t.kind is MemoryKind.EMOTIONAL and t.register in resolvable and t.intensity >= tone.min_intensity
            and t.valence <= tone.max_valence and not t.resolution_cue
        ]
        resolvers = [
            Resolver(memory_id=m.memory_id, text=m.text, created_at=m.created_at, anchors=t.anchors,
                     vector=session_vectors[i], cue=t.resolution_cue, named=frozenset(t.resolves))
            for i, (m, t) in enumerate(zip(memories, traces, strict=True)) if t.resolution_cue
        ]
        links = link_resolutions(resolvers, candidates, min_similarity=write.resolution_min_similarity,
                                 common=self._common_terms(partition))
        by_resolver: dict[str, list[str]] = {}
        for link in links:
            by_resolver.setdefault(link.resolved_by, []).append(link.memory_id)
        traces = [t.model_copy(update={"resolves": tuple(by_resolver.get(t.memory_id, ()))}) if t.resolution_cue
                  else t for t in traces]
        return traces, [
            Resolution(memory_id=link.memory_id, resolved_by=link.resolved_by, register=link.register,
                       at=link.at, cue=link.cue, link=link.link, recorded_at=written_at)
            for link in links
        ]

    def _earlier_texts(self, session_id: str, memories: list[Memory]) -> list[str]:
        """The user's earlier turns (other sessions, said before this one) holding the words of this session
        that earlier sessions could make anchors (``traces.anchors.lookup_words``): a thing said once in each of
        two sessions, a name capitalised there and only at a sentence start here. One substring search per
        word, through the store port, so it needs nothing the two stores do not already have."""
        wanted = lookup_words([m.text for m in memories], exclude=[memories[0].character_id])[:EARLIER_WORDS]
        started = min(m.created_at for m in memories)
        found: dict[str, None] = {}
        for word in wanted:
            for candidate in self._store.substring_search(
                    memories[0].partition, query_text=word, limit=EARLIER_PER_WORD, exclude_session=session_id,
                    created_before=started, include_archived=True):
                found[candidate.memory_id] = None
        return [m.text for m in self._store.get_memories(list(found)) if m.kind == "turn"]

    def _write_facts(self, memories: list[Memory], traces: list[Trace]) -> None:
        """The session's atomic facts, in the order they were said, each at the time it was said: a later
        statement on the same slot supersedes an earlier one. Status follows the relation's policy (the system
        extracted them; the user stated them). Idempotent: a retried session writes the same fact ids. An ending
        that names a value its slot no longer holds ("I left Brightline" after "I started at Kestrel") is not
        written: it tells of an older value (``engine.facts.ends_another``)."""
        by_id = {t.memory_id: t for t in traces}
        for memory in memories:
            trace = by_id.get(memory.memory_id)
            found = {(f.subject, f.relation, f.value): f for f in
                     [*extract(memory.text), *(trace.extracted if trace is not None else ())]}
            for fact in found.values():
                if ends_slot(fact):
                    partition = partition_for("user", memory.character_id, memory.user_id)
                    held = self._facts.active_value(partition, (fact.subject, fact.relation), at=memory.created_at)
                    if ends_another(fact, held):
                        continue
                self._facts.write(fact, scope="user", character_id=memory.character_id, user_id=memory.user_id,
                                  writer="system", source="user_stated", at=memory.created_at,
                                  session_id=memory.session_id, provenance=(memory.memory_id,))
