"""The engine facade: ingest, close a session (the write-time pass), recall. The API and eval call only this."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from engine.domain.errors import BackendUnavailable, Conflict, InvalidInput, NotFound
from engine.domain.models import (
    AuditEvent,
    CloseReport,
    ExtractedFact,
    IngestReport,
    Memory,
    MemoryState,
    Partition,
    RecallMode,
    RecallQuery,
    RecallResult,
    Resolution,
    ReviewItem,
    Scope,
    Source,
    StrengthSignals,
    ToneConstraint,
    Trace,
    TraceStatus,
    TrustRecord,
    Turn,
    partition_key,
)
from engine.domain.models.exchange import (
    ExportedAudit,
    ExportedMemory,
    ExportedReview,
    ExportedSession,
    RecordKind,
    UserExport,
)
from engine.domain.ports import Classifier, Embedder, Ledger, MemoryStore, Profiles
from engine.domain.scopes import namespace_prefix, partition_for, visible
from engine.domain.tuning import ProfileSource, TuningProfile
from engine.facts import FactService, FactWrite, Writer
from engine.gate import VisibilityGates
from engine.ingest import Ingestor
from engine.lifecycle import ErasureReceipt, Lifecycle, SweepReport
from engine.recall import Recaller
from engine.recall.stage_one import search_levels
from engine.retrieval import Query, lexical_query, query_vector
from engine.strength import strengths
from engine.telemetry import span
from engine.writer import TraceWriter
from traces.facts import AUTO_ACTIVE_RELATIONS

log = logging.getLogger("feltsense.engine")
MAX_SEARCH = 200
"""The most matches one search answers: stage one's largest pool (``RetrievalParams.candidates``)."""
EVERY_MEMORY_BEFORE = datetime(2262, 1, 1, tzinfo=UTC)
"""A search's bound on when a memory was said: in effect none (a replayed transcript may be dated after the engine's
now). Not year 9999: Weaviate filters dates as 64-bit nanoseconds since 1970, which end in April 2262, and a later
bound matched nothing there."""
EXPORT_PAGE = 500
"""Memories read a page at a time by an export."""
EXPORT_MAX_REVIEW_ITEMS = 1_000_000
"""Review items of one partition an export reads (all of them, in practice)."""
READINESS_PROBE = Partition(character_id="readyz", user_id="readyz")
"""The partition a readiness check counts (``Engine.ping_store``): nobody's, so the count is cheap."""


@dataclass(frozen=True)
class Found:
    """One of a user's own memories as a listing or a search shows it to that user: with its trace, its
    lifecycle state, its live strength and whether it has faded."""

    memory: Memory
    trace: Trace | None
    state: MemoryState
    strength: float  # scoring.strength, now: decay since last validated, use and source trust; pins and canon floored
    faded: bool  # strength below the profile's strength.archive_below: what the nightly sweep moves to the archive
    relevance: float | None = None  # a search's: stage one's fused relevance, 0..1, no decay and no floor


@dataclass(frozen=True)
class Search:
    """A search's matches, best first, and which mode answered (hybrid; lexical or substring when degraded)."""

    found: list[Found]
    mode: RecallMode


@dataclass(frozen=True)
class Sizes:
    """The store at one moment (``Engine.sizes``)."""

    backend: str
    memories: int
    sessions_pending_traces: int


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RecallRetention:
    """How long the recall log keeps a recall, and the most its bodies may total (UTF-8 bytes; None: no bound).
    The nightly sweep enforces both (``RecallLog.expire_recalls``); ``engine.settings.RecallLogSettings``."""

    days: int = 30
    max_bytes: int | None = 1_073_741_824


class Engine:
    """One engine over one store. Thread-safe for concurrent recalls; writes are serialised by the store."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        classifier: Classifier,
        profiles: Profiles | None = None,
        ledger: Ledger,
        clock: Callable[[], datetime] = utc_now,
        recall_retention: RecallRetention = RecallRetention(),
    ) -> None:
        self.store = store
        self.recall_retention = recall_retention
        self.embedder = embedder
        self.classifier = classifier
        self.profiles = profiles or ProfileSource()
        self.clock = clock
        self.ledger = ledger  # required: a service's audit trail and review queue are never silently in memory
        self.facts = FactService(store=store, embedder=embedder, ledger=self.ledger,
                                 auto_active=AUTO_ACTIVE_RELATIONS, profiles=self.profiles)
        self.lifecycle = Lifecycle(store=store, ledger=self.ledger, facts=self.facts, profiles=self.profiles,
                                   clock=clock)
        self._ingestor = Ingestor(store=store, embedder=embedder, erased=self.ledger.erased,
                                  erased_turns=self.ledger.erased_turns,
                                  embedded=lambda lines, vectors: self._recaller.remember_lines(lines, vectors))
        # What recall may see changes all at once: a session's traces and facts, an erasure (engine.gate).
        self._visibility = VisibilityGates()
        self._writer = TraceWriter(
            store=store, classifier=classifier, embedder=embedder, profiles=self.profiles, clock=clock,
            facts=self.facts, publish=self._visibility.exclusive, ledger=self.ledger,
        )
        self._recaller = Recaller(
            store=store, embedder=embedder, profiles=self.profiles, clock=clock,
            resolutions=lambda partition, at: self.ledger.resolutions_in_force(
                partition_key(partition.character_id, partition.user_id), at),
        )
        self._write_lock = threading.Lock()

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        """Append turns idempotently (a turn id seen before is not stored again) and index the user turns."""
        with span("feltsense.ingest", {"feltsense.turns": len(turns)}) as current, self._write_lock:
            report = self._ingestor.ingest(turns)
            current.set_attributes({"feltsense.stored": report.stored, "feltsense.memories": report.memories})
            return report

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> CloseReport:
        """Run the write-time pass over a session's memories (traces, then atomic facts). A classifier failure
        leaves traces pending, and so does a backend outage that cuts the pass short (``TraceWriter.leave_pending``)."""
        closed_at = closed_at or self.clock()
        with span("feltsense.close_session") as current:
            # The classification runs outside the write lock, so ingest and other closes are not held up by it;
            # the write under the lock uses it only if the session has not changed meanwhile.
            try:
                with span("feltsense.close_session.classify"):
                    prepared = self._writer.prepare(session_id, closed_at=closed_at)
            except BackendUnavailable:  # the pass under the lock meets the outage too, and leaves traces pending
                prepared = None
            with span("feltsense.close_session.write"), self._write_lock:
                try:
                    report = self._writer.close_session(session_id, closed_at=closed_at, prepared=prepared)
                except BackendUnavailable as exc:
                    self._writer.leave_pending(session_id, exc)
                    raise
            current.set_attributes({"feltsense.traces_written": report.traces_written,
                                    "feltsense.traces_pending": report.traces_pending})
        for memory in self.store.session_memories(session_id)[:1]:
            self.ledger.touch(memory.character_id, memory.user_id)
        return report

    def accept_close(self, session_id: str, *, closed_at: datetime | None = None) -> None:
        """Record a close whose write-time pass is queued to run later (``engine.jobs``), before it is queued:
        the session is marked closed and its memories get pending traces, so a pass that never runs (its job lost
        with the queue, or the process killed first) is still retried by ``retry_pending``. NotFound for a
        session without turns."""
        with self._write_lock:
            self._writer.accept_close(session_id, closed_at=closed_at or self.clock())

    def pending_traces(self, session_id: str) -> int:
        """How many of a session's memories have no complete trace yet (the write-time pass has not run on them)."""
        memories = self.store.session_memories(session_id)
        traces = self.store.get_traces([m.memory_id for m in memories])
        return sum(1 for m in memories
                   if (trace := traces.get(m.memory_id)) is None or trace.status is not TraceStatus.COMPLETE)

    def retry_pending(self) -> int:
        """Retry the write-time pass for closed sessions with pending traces; returns traces completed."""
        with self._write_lock:
            return self._writer.retry_pending()

    def backfill_vectors(self, limit: int = 256) -> int:
        """Embed memories stored while the embedder was down; returns how many got vectors."""
        with self._write_lock:
            return self._ingestor.backfill(limit)

    def background_pass(self) -> dict[str, int]:
        """What the background loop runs: backfill vectors, retry pending traces, fold usage into strength.
        Never raises."""
        done = {"vectors": 0, "traces": 0, "usage": 0}
        for key, job in (("vectors", self.backfill_vectors), ("traces", self.retry_pending),
                         ("usage", self.lifecycle.flush_usage)):
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

    def listing(self, partition: Partition, *, offset: int, limit: int) -> list[Found]:
        """``memories`` with each memory's state, live strength and whether it has faded (``Found``)."""
        return self._found(partition, self.store.list_memories(partition, offset=offset, limit=limit))

    def search(self, partition: Partition, text: str, *, limit: int, include_archived: bool = True) -> Search:
        """The partition's own memories that match ``text``, best first by stage one's fused relevance alone: no
        decay, no salience, no strength, and none of recall's floors that cut a weak match relative to the best
        one. So a faded memory is found like a fresh one, and an archived one unless ``include_archived`` is False.
        Only this partition's memories: never the canon, the shared level or another user's. This is for a user
        looking for one of their memories (to read it or erase it); recall is what ranks for the character.

        The embedder down, it answers lexically; lexical finding nothing, by substring (``Search.mode`` says).
        ``limit`` is at most ``MAX_SEARCH`` (stage one's largest pool)."""
        if not 1 <= limit <= MAX_SEARCH:
            raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH}, got {limit}", field="limit")
        profile = self.profiles.profile_for(partition.character_id)
        # Stage one unfloored: a hit is any memory the vector leg's threshold or a shared term lets in. Validated,
        # so a renamed constant fails here rather than leaving the floors on.
        params = type(profile.retrieval).model_validate({
            **profile.retrieval.model_dump(), "fused_floor": 0.0, "fused_relative_floor": 0.0,
            "candidates": max(limit, profile.retrieval.candidates)})
        query_terms, term_weights = lexical_query(text, (), params)
        mode: RecallMode = "hybrid"
        vector = None
        try:
            vector, _ = query_vector(self.embedder.embed([text])[0], None, params)
        except Exception as exc:  # as in recall: any embedder failure degrades to lexical, and the answer says so
            mode = "lexical"
            log.warning("search degraded to lexical for %s/%s: %s", partition.character_id, partition.user_id, exc)
        with self._visibility.shared(partition):  # as recall reads: a closing session's facts all or none
            query = Query(vector=vector, cosine_scale=1.0, terms=query_terms, term_weights=term_weights)
            searched = search_levels(self.store, [partition], query, mode, params, text=text,
                                     created_before=EVERY_MEMORY_BEFORE, exclude_session=None,
                                     substring_limit=limit, include_archived=include_archived)
            mode, candidates = searched.mode, searched.candidates
            relevance = {c.memory_id: c.relevance for c in candidates[:limit]}
            found = {f.memory.memory_id: f for f in self._found(
                partition, self.store.get_memories(list(relevance)), relevance)}
        return Search(found=[found[m] for m in relevance if m in found], mode=mode)

    def _found(self, partition: Partition, memories: Sequence[Memory],
               relevance: dict[str, float] | None = None) -> list[Found]:
        """``memories`` that are ``partition``'s, as ``Found``: faded by the sweep's own measure (``strengths``)."""
        memories = [m for m in memories if m.partition == partition]
        ids = [m.memory_id for m in memories]
        states = self.states(ids)
        traces = self.store.get_traces(ids)
        profile = self.profiles.profile_for(partition.character_id)
        live = strengths(memories, states, self.clock(), profile).tolist() if memories else []
        return [Found(memory=m, trace=traces.get(m.memory_id), state=states[m.memory_id], strength=strength,
                      faded=strength < profile.strength.archive_below,
                      relevance=None if relevance is None else relevance.get(m.memory_id))
                for m, strength in zip(memories, live, strict=True)]

    def memory(self, memory_id: str, partition: Partition) -> tuple[Memory, Trace | None]:
        """One memory with its trace; NotFound unless it belongs to ``partition`` (never reveal another's)."""
        found = self.store.get_memories([memory_id], current=True)  # another process may have erased it
        if not found or found[0].partition != partition:
            raise NotFound(f"no memory {memory_id!r}")
        return found[0], self.store.get_traces([memory_id]).get(memory_id)

    def forget(self, memory_id: str, partition: Partition, *, strict: bool = False,
               actor: str = "user") -> ErasureReceipt:
        """Erase one memory with its raw turn, trace, facts, vector, lexical entries and the recalls that showed
        it; NotFound unless it is ``partition``'s. The audit skeleton stays (without names when ``strict``)."""
        return self.erase_memory(memory_id, [partition], strict=strict, actor=actor)

    def recall(self, query: RecallQuery) -> RecallResult:
        # An erasure of this user waits for this turn's log entry, then deletes it.
        with self._visibility.shared(Partition(character_id=query.character_id, user_id=query.user_id)):
            result = self._recaller.recall(query)
            at = query.at or self.clock()
            self.lifecycle.note_retrieved([m.memory_id for m in result.memories], query.message, at)
            # The recall log: "what did the character actually see on that turn" is answerable later by id.
            try:
                self.ledger.record_recall(result.recall_id, partition_key(query.character_id, query.user_id), at,
                                          result.model_dump_json())
            except BackendUnavailable as exc:
                # The turn still gets its recall (retried, it would count its memories' use twice); the answer
                # and the log say that this one was not kept, as a degraded search mode is said.
                note = (f"recall log unavailable ({exc.backend}): recall {result.recall_id} was not kept and "
                        "cannot be looked up by id later")
                log.warning("%s: %s", note, exc)
                result = result.model_copy(update={"trace": result.trace.model_copy(
                    update={"notes": (*result.trace.notes, note)})})
        return result

    def standing_rules(self, partition: Partition, at: datetime | None = None) -> tuple[ToneConstraint, ...]:
        """The standing tone rules in force for one user with one character at ``at`` (now by default)."""
        return self._recaller.standing_rules(partition, at or self.clock())

    # -- export -------------------------------------------------------------------------------------------

    def export_records(self, partition: Partition, *, at: datetime | None = None
                       ) -> Iterator[tuple[RecordKind, BaseModel]]:
        """Everything held about one user with one character, record by record in ``SECTIONS`` order (the
        memories a page at a time, so a large partition streams without being held). Reads only: each page is
        read as it stands; an erasure meanwhile may leave records out of the pages still to come."""
        key = partition_key(partition.character_id, partition.user_id)
        sessions: dict[str, None] = {}
        pages: list[list[Memory]] = []
        offset = 0
        while True:  # the session ids first (a session's turns are read by session)
            page = self.store.list_memories(partition, offset=offset, limit=EXPORT_PAGE)
            pages.append(page)
            sessions.update((m.session_id, None) for m in page)
            if len(page) < EXPORT_PAGE:
                break
            offset += EXPORT_PAGE
        closed = self.store.closed_sessions(list(sessions))
        for session_id in sessions:
            yield "session", ExportedSession(session_id=session_id, closed=session_id in closed)
        for session_id in sessions:
            for turn in self.store.get_turns(session_id):
                if turn.character_id == partition.character_id and turn.user_id == partition.user_id:
                    yield "turn", turn
        for page in pages:
            ids = [m.memory_id for m in page]
            traces, states = self.store.get_traces(ids), self.store.get_states(ids)
            for memory in page:
                yield "memory", ExportedMemory(memory=memory, trace=traces.get(memory.memory_id),
                                               state=states.get(memory.memory_id))
        for resolution in self.ledger.resolutions(key):
            yield "resolution", resolution
        for item in self.ledger.open_items([key], decision=None, limit=EXPORT_MAX_REVIEW_ITEMS):
            yield "review_item", ExportedReview(**item.model_dump(exclude={"partition"}))
        for event in self.ledger.partition_history(key):
            yield "audit", ExportedAudit(**event.model_dump(exclude={"partition"}))
        for rule in self.standing_rules(partition, at):
            yield "tone_rule", rule

    def import_partition(self, document: UserExport, *, merge: bool = False) -> dict[str, int]:
        """Load an export (``export_records`` as a ``UserExport``, its ids as this engine stores them) into its
        partition here:
        turns, memories with their traces and states (embedded again by this engine's embedder: vectors are not
        exported), resolutions, review items and the audit trail, each kept exactly, ids and times included.

        A partition that already holds memories is refused (Conflict) unless ``merge``; a merge adds what is not
        there yet and leaves what is, so importing a document twice is importing it once. Every record must be
        the document's partition's (InvalidInput naming the first that is not). Returns what was added."""
        partition = Partition(character_id=document.character_id, user_id=document.user_id)
        for n, turn in enumerate(document.turns):
            if (turn.character_id, turn.user_id) != (partition.character_id, partition.user_id):
                raise InvalidInput(f"turns[{n}] ({turn.turn_id!r}) is not of the document's character and user",
                                   field=f"turns.{n}")
        for n, exported in enumerate(document.memories):
            memory = exported.memory
            if (memory.character_id, memory.user_id) != (partition.character_id, partition.user_id):
                raise InvalidInput(f"memories[{n}] ({memory.memory_id!r}) is not of the document's character and "
                                   "user", field=f"memories.{n}")
            for part, record in (("trace", exported.trace), ("state", exported.state)):
                if record is not None and record.memory_id != memory.memory_id:
                    raise InvalidInput(f"memories[{n}].{part} is of {record.memory_id!r}, not of its memory "
                                       f"{memory.memory_id!r}", field=f"memories.{n}.{part}")
        memories = [m.memory for m in document.memories]
        try:
            vectors = (self.embedder.embed([m.text for m in memories]) if memories else None)
        except Exception as exc:  # stored without vectors: the background pass embeds them (as ingest does)
            log.warning("import: the embedder failed; %d memories stored without vectors: %s", len(memories), exc)
            vectors = None
        key = partition_key(partition.character_id, partition.user_id)
        with self._write_lock:
            held = self.store.count(partition)
            if held and not merge:
                raise Conflict(f"{partition.character_id}/{partition.user_id} already holds {held} memories: an "
                               "import does not mix two histories unless asked to merge them", field="merge")
            added_turns = sum(self.store.add_turns(document.turns))
            ends: dict[str, datetime] = {}
            for turn in document.turns:
                ends[turn.session_id] = max(ends.get(turn.session_id, turn.timestamp), turn.timestamp)
            for session in document.sessions:
                if session.closed:
                    self.store.mark_session_closed(session.session_id, ends.get(session.session_id,
                                                                                document.exported_at))
            new = [i for i, m in enumerate(memories) if m.memory_id not in
                   {found.memory_id for found in self.store.get_memories([m.memory_id for m in memories],
                                                                         current=True)}]
            if new:
                self.store.add_memories([memories[i] for i in new], None if vectors is None else vectors[new])
                self.store.put_traces([t for i in new if (t := document.memories[i].trace) is not None])
                self.store.put_states([st for i in new if (st := document.memories[i].state) is not None])
            restored = self.ledger.restore_partition(
                key,
                audit=[AuditEvent(partition=key, **event.model_dump()) for event in document.audit],
                resolutions=document.resolutions,
                review_items=[ReviewItem(partition=key, **item.model_dump()) for item in document.review_items])
            self.ledger.touch(partition.character_id, partition.user_id)
        return {"turns": added_turns, "memories": len(new), **restored}

    def record_export(self, partition: Partition, *, actor: str, at: datetime | None = None) -> None:
        """The audit trail's entry for an export: who took a copy of the partition, and when."""
        self.ledger.record("", partition_key(partition.character_id, partition.user_id), "exported",
                           at=at or self.clock(), actor=actor)

    def recall_record(self, recall_id: str, partition: Partition) -> RecallResult:
        """A past turn's recall, as it was returned; NotFound unless it was ``partition``'s."""
        return RecallResult.model_validate_json(
            self.ledger.recall(recall_id, partition_key(partition.character_id, partition.user_id)))

    # -- resolutions ---------------------------------------------------------------------------------------

    def resolutions(self, partition: Partition, *, include_undone: bool = True) -> list[Resolution]:
        """A user's resolutions (earlier anxiety or anger settled by a later memory), oldest first."""
        return self.ledger.resolutions(partition_key(partition.character_id, partition.user_id),
                                       include_undone=include_undone)

    def undo_resolution(self, memory_id: str, partition: Partition, *, actor: str) -> list[Resolution]:
        """Put a resolved memory's tone back in force, with the rest of its episode that the same memory resolved
        (resolution works on episodes: one session, one register). Audited; NotFound unless ``memory_id`` is
        ``partition``'s and has a resolution in force."""
        key = partition_key(partition.character_id, partition.user_id)
        with self._write_lock:
            active = self.ledger.resolutions(key, include_undone=False)
            mine = [r for r in active if r.memory_id == memory_id]
            if not mine:
                raise NotFound(f"no resolution of memory {memory_id!r} in force")
            resolvers = {r.resolved_by for r in mine}
            siblings = [r.memory_id for r in active
                        if r.resolved_by in resolvers and r.register == mine[0].register and r.memory_id != memory_id]
            memories = {m.memory_id: m for m in self.store.get_memories([memory_id, *siblings])}
            session = memories[memory_id].session_id if memory_id in memories else None
            episode = [m for m in siblings if m in memories and memories[m].session_id == session]
            return self.ledger.undo_resolutions(key, [memory_id, *episode], by=actor, at=self.clock())

    # -- facts, lifecycle ---------------------------------------------------------------------------------

    def write_fact(self, fact: ExtractedFact, *, scope: Scope, character_id: str, user_id: str | None,
                   writer: Writer, source: Source, actor: str = "", at: datetime | None = None) -> FactWrite:
        """Write one fact on ``writer``'s authority (``engine.facts.STATUS_MATRIX``); the audit names ``actor``."""
        with self._write_lock:
            return self.facts.write(fact, scope=scope, character_id=character_id, user_id=user_id, writer=writer,
                                    source=source, at=at or self.clock(), actor=actor)

    def write_canon(self, character_id: str, record_id: str, text: str, *, actor: str,
                    at: datetime | None = None) -> Memory:
        """A canon record (the character's own lore), stored whole and pinned: Path A injects it every turn.
        Writing the same id again replaces its text."""
        partition = partition_for("canon", character_id)
        memory = Memory(memory_id="c_" + hashlib.blake2b(f"{character_id}\x1f{record_id}".encode(),
                                                        digest_size=12).hexdigest(),
                        turn_id="", session_id="", character_id=partition.character_id, user_id=partition.user_id,
                        text=text, created_at=at or self.clock(), kind="record", scope="canon")
        with self._write_lock:
            found = self.store.get_memories([memory.memory_id])
            if found and found[0].text == text:
                return found[0]
            if found:
                self.store.delete_memories([memory.memory_id])
            try:
                vectors = self.embedder.embed([text])
            except Exception as exc:  # stored lexical-only; the background backfill embeds it later
                log.warning("embedder failed writing a canon record; stored without a vector: %s", exc)
                vectors = None
            self.store.add_memories([memory], vectors)
            self.store.put_states([MemoryState(memory_id=memory.memory_id, pinned=True, changed_at=memory.created_at,
                                               signals=StrengthSignals(source="director"))])
            self.ledger.record(memory.memory_id, partition_key(partition.character_id, partition.user_id),
                               "canon_written", at=memory.created_at, actor=actor, status="active")
        return memory

    def list_facts(self, scope: Scope, character_id: str, user_id: str | None) -> list[tuple[Memory, MemoryState]]:
        partition = partition_for(scope, character_id, user_id)
        facts = self.store.list_facts(partition)
        states = self.store.get_states([f.memory_id for f in facts])
        return [(f, states.get(f.memory_id) or MemoryState(memory_id=f.memory_id)) for f in facts]

    def states(self, memory_ids: list[str]) -> dict[str, MemoryState]:
        stored = self.store.get_states(memory_ids)
        return {m: stored.get(m) or MemoryState(memory_id=m) for m in memory_ids}

    def archive(self, memory_id: str, partitions: list[Partition], *, actor: str) -> MemoryState:
        with self._write_lock:
            return self.lifecycle.archive(memory_id, partitions, actor=actor)

    def restore(self, memory_id: str, partitions: list[Partition], *, actor: str) -> MemoryState:
        with self._write_lock:
            return self.lifecycle.restore(memory_id, partitions, actor=actor)

    def pin(self, memory_id: str, partitions: list[Partition], *, pinned: bool, actor: str) -> MemoryState:
        with self._write_lock:
            return self.lifecycle.pin(memory_id, partitions, pinned=pinned, actor=actor)

    def erase_memory(self, memory_id: str, partitions: list[Partition], *, strict: bool = False,
                     actor: str) -> ErasureReceipt:
        with self._write_lock, contextlib.ExitStack() as gated:
            for partition in dict.fromkeys(partitions):
                gated.enter_context(self._visibility.exclusive(partition))
            return self.lifecycle.erase_memory(memory_id, partitions, strict=strict, actor=actor)

    def erase_user(self, character_id: str, user_id: str, *, strict: bool = False, actor: str) -> ErasureReceipt:
        partition = partition_for("user", character_id, user_id)
        with self._write_lock, self._visibility.exclusive(partition):
            receipt = self.lifecycle.erase_partition(partition, strict=strict, actor=actor)
            self.ledger.untouch(character_id, user_id)
            return receipt

    def sweep(self, *, namespace: str | None = None) -> SweepReport:
        """The nightly job: usage folded in, interrupted supersessions finished, decayed memories archived,
        consolidation proposals filed to the review queue. With ``namespace`` (a namespace's prefix,
        ``"acme:"``; see ``engine.domain.scopes``) only the partitions and levels whose character id carries it;
        without, every one."""
        known = [(c, u) for c, u in self.ledger.partitions() if namespace is None or c.startswith(namespace)]
        partitions = [Partition(character_id=c, user_id=u) for c, u in known]
        # A partition's levels share its prefix (canon: the character's id, shared: the organisation's).
        levels = {p for c, u in known for _, p in visible(c, u)}
        with self._write_lock:
            report = self.lifecycle.sweep(sorted(set(partitions) | levels,
                                                 key=lambda p: (p.character_id, p.user_id)))
        # The recall log's retention: by age, and for the whole log by size too. A namespace's sweep expires
        # only its partitions (keys start with the character id, so with the namespace's prefix).
        expired = self.ledger.expire_recalls(
            before=self.clock() - timedelta(days=self.recall_retention.days),
            max_bytes=self.recall_retention.max_bytes if namespace is None else None,
            partition_prefix=namespace)
        if expired:  # what was removed held what users said: out of the write-ahead log too, as erasure does
            try:
                self.ledger.purge()
            except BackendUnavailable as error:
                log.warning("recall retention: %s; the next checkpoint removes the expired pages", error)
        return report.model_copy(update={"recalls_expired": expired})

    def review_items(self, partitions: list[Partition], decision: str | None = "pending") -> list[ReviewItem]:
        return self.lifecycle.review_items(partitions, decision)

    def decide(self, item_id: str, decision: str, partitions: list[Partition], *, by: str) -> ReviewItem:
        with self._write_lock:
            return self.lifecycle.decide(item_id, decision, partitions, by=by)

    def trust_record(self, character_id: str, change_kind: str) -> tuple[TrustRecord, TuningProfile]:
        """The organisation's record of people's decisions on ``change_kind`` (the namespace of ``character_id``),
        with the character's profile, whose ``trust`` holds the bar."""
        return (self.lifecycle.trust_record(namespace_prefix(character_id), change_kind),
                self.profiles.profile_for(character_id))

    def audit_trail(self, partition: Partition) -> list[AuditEvent]:
        """A level's audit trail, oldest first: what existed and how it changed, never what it said."""
        return self.ledger.partition_history(partition_key(partition.character_id, partition.user_id))

    # -- readiness, replays ---------------------------------------------------------------------------------

    def ping_store(self) -> None:
        """Raises unless the store answers (a readiness check)."""
        self.store.count(READINESS_PROBE)

    def ping_ledger(self) -> None:
        """Raises unless the ledger answers (a readiness check; on PostgreSQL, the control plane's database)."""
        self.ledger.ping()

    def ping_embedder(self) -> None:
        """Raises unless the embedder answers (a readiness check: one short line embedded)."""
        self.embedder.embed(["readiness probe"])

    def sizes(self) -> Sizes:
        """What ``/metrics`` reports of the store at a scrape: its backend, the memories it holds across every
        partition, and the closed sessions whose write-time traces are still pending."""
        return Sizes(backend=self.store.backend, memories=self.store.total(),
                     sessions_pending_traces=len(self.store.pending_sessions()))

    def components(self) -> tuple[Embedder, Classifier]:
        """The embedder and classifier this engine runs on: what a replay on this process uses
        (``engine.replay_runner.ThreadWorkers``)."""
        return self.embedder, self.classifier

    def close(self) -> None:
        self.store.close()
        self.ledger.close()
