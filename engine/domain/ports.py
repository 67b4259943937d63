"""Ports: the narrow, batch-first interfaces the services depend on. Adapters implement them structurally."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from engine.domain.errors import Conflict
from engine.domain.models import (
    AuditEvent,
    Candidate,
    Decision,
    ExtractedFact,
    Memory,
    MemoryState,
    Partition,
    Resolution,
    ReviewItem,
    ReviewKind,
    Trace,
    Turn,
)
from engine.domain.tuning import RetrievalParams, TuningProfile


@dataclass(frozen=True)
class ToneCandidates:
    """A partition's complete emotional traces that qualify for tone rules, as aligned arrays (row i = one memory).

    Arrays rather than objects because a long-lived companion can hold thousands of them, and recall scans them
    every turn; only the few episodes that become rules are materialised.
    """

    memory_ids: list[str]
    episode: NDArray[np.int64]  # equal values = same episode (same session and register)
    session_ids: list[str]
    intensity: NDArray[np.float64]
    valence: NDArray[np.float64]
    created_epoch: NDArray[np.float64]  # seconds since the Unix epoch


@dataclass(frozen=True)
class LegScores:
    """Stage one's raw material from a store, for a pool of memories recall may see (row i = one memory).

    No store fuses: ``scoring.fusion`` turns this into one ranking, the same way for every backend. The pool
    must hold, by cosine, at least the best ``params.candidates`` memories and, lexically, the memories the
    query's terms occur in (or at least the best several times ``params.candidates`` of them by BM25); rows are
    in the store's stable order (ingest order), which breaks ties.
    """

    memory_ids: list[str]
    cosine: NDArray[np.float64]  # with the query vector; NaN where the memory has no vector
    term_frequency: NDArray[np.float64]  # pool x query terms
    doc_length: NDArray[np.float64]  # index terms per memory
    document_frequency: NDArray[np.float64]  # per query term, over the partition's memories
    documents: int  # memories in the partition, for the idf
    average_doc_length: float
    excluded_current_session: int = 0  # memories left out because they belong to the current session

    @classmethod
    def empty(cls, terms: int, excluded_current_session: int = 0) -> LegScores:
        return cls(memory_ids=[], cosine=np.zeros(0), term_frequency=np.zeros((0, terms)), doc_length=np.zeros(0),
                   document_frequency=np.zeros(terms), documents=0, average_doc_length=0.0,
                   excluded_current_session=excluded_current_session)


class Embedder(Protocol):
    """Text in, L2-normalised float32 rows out (one row per text)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class TraceClassification(Protocol):
    """One memory's classification: register (from ``engine.domain.models.REGISTERS``), valence, intensity."""

    @property
    def register(self) -> str: ...

    @property
    def valence(self) -> float: ...

    @property
    def intensity(self) -> float: ...

    @property
    def anchors(self) -> tuple[str, ...]:
        """Anchors the classifier found (a model that reads the session can); merged with the extracted ones."""
        ...

    @property
    def facts(self) -> tuple[str, ...]:
        """Durable facts, one sentence each; merged with the extracted ones."""
        ...

    @property
    def extracted(self) -> tuple[ExtractedFact, ...]:
        """The same facts with their slots (subject, relation), when the classifier finds them."""
        ...


class Classifier(Protocol):
    """Classifies one closed session's memories at write time, in conversation order (one call per session).

    ``embeddings`` are the memories' own vectors, already computed; a classifier that does not use them ignores
    them. Raise any exception on failure: the memories stay stored with pending traces and are retried.
    """

    @property
    def name(self) -> str:
        """name@version, written into every trace."""
        ...

    @property
    def per_sentence(self) -> bool:
        """True for a sentence-level model: the write-time pass then also classifies each sentence of a memory
        and keeps the most intense. A model that reads the whole session at once says False."""
        ...

    def classify(
        self, texts: Sequence[str], embeddings: NDArray[np.float32]
    ) -> Sequence[TraceClassification]: ...


class TurnLog(Protocol):
    """The raw conversation: turns by session, and which sessions are closed."""

    def add_turns(self, turns: Sequence[Turn]) -> list[bool]:
        """Store turns idempotently by turn id; True for each turn that was new."""
        ...

    def get_turns(self, session_id: str) -> list[Turn]: ...

    def find_turns(self, turn_ids: Sequence[str]) -> dict[str, Turn]:
        """The stored turns among ``turn_ids``, by id (whoever owns them: ingest checks the owner)."""
        ...

    def delete_turns(self, partition: Partition, turn_ids: Sequence[str] | None = None) -> list[str]:
        """Erase a partition's turns (the raw conversation), or only those of ``turn_ids`` that are the
        partition's; returns the ids erased."""
        ...

    def mark_session_closed(self, session_id: str, closed_at: datetime) -> None: ...

    def closed_sessions(self, session_ids: Sequence[str]) -> set[str]: ...


class MemoryRecords(Protocol):
    """Memories and their vectors, by id and by partition."""

    def add_memories(self, memories: Sequence[Memory], vectors: NDArray[np.float32] | None) -> None:
        """Store memories idempotently by memory id. ``vectors`` None: the embedder was down; the memories are
        searchable lexically until ``set_vectors`` fills them in."""
        ...

    def set_vectors(self, memory_ids: Sequence[str], vectors: NDArray[np.float32]) -> None: ...

    def unembedded(self, limit: int) -> list[Memory]:
        """Memories stored without a vector, oldest first."""
        ...

    def session_memories(self, session_id: str) -> list[Memory]:
        """A session's turn memories in ingest order (facts distilled from the session are not among them)."""
        ...

    def list_memories(self, partition: Partition, *, offset: int, limit: int) -> list[Memory]:
        """One partition's memories in ingest order, a page at a time."""
        ...

    def get_memories(self, memory_ids: Sequence[str], *, current: bool = False) -> list[Memory]:
        """The memories among ``memory_ids`` that exist, in that order. ``current``: from the backend itself, never
        from a cache that another process's erasure could have left behind (a read by id a person asked for)."""
        ...

    def get_vectors(self, memory_ids: Sequence[str]) -> NDArray[np.float32]:
        """One row per id, in order; a row of NaN for a memory stored without a vector."""
        ...

    def delete_memories(self, memory_ids: Sequence[str]) -> None:
        """Forget memories, their traces, vectors and lexical entries (their turns stay). Unknown ids are
        ignored."""
        ...

    def count(self, partition: Partition) -> int: ...


class TraceRecords(Protocol):
    """The write-time traces beside memories, and the emotional ones that can carry tone rules."""

    def put_traces(self, traces: Sequence[Trace]) -> None: ...

    def get_traces(self, memory_ids: Sequence[str]) -> dict[str, Trace]: ...

    def tone_candidates(
        self, partition: Partition, *, min_intensity: float, max_valence: float
    ) -> ToneCandidates:
        """Complete emotional traces at or above ``min_intensity`` and at or below ``max_valence``: the memories
        that can carry tone rules. Archived memories count: a grief keeps its standing rule in the archive."""
        ...

    def pending_sessions(self) -> list[str]:
        """Closed sessions with at least one pending trace."""
        ...


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """One stage-one search of one partition (``SearchIndex.search``).

    ``query_vector`` is unit length (None: the vector leg is skipped, every cosine NaN); ``query_terms`` are
    distinct index terms (``engine.domain.text.terms``), in the order of the term-frequency columns, with
    ``term_weights`` (all 1 when None) for a store that bounds the lexical part of its pool by BM25. A memory of
    ``exclude_session`` or created after ``created_before`` is not in the pool; archived ones are with
    ``include_archived``.
    """

    partition: Partition
    query_vector: NDArray[np.float32] | None
    query_terms: Sequence[str]
    params: RetrievalParams
    exclude_session: str | None
    created_before: datetime
    include_archived: bool = False
    term_weights: Sequence[float] | None = None


class SearchIndex(Protocol):
    """Stage one's indexes over a partition's memories: raw leg material, never a ranking."""

    def search(self, request: SearchRequest) -> LegScores:
        """Stage one's legs over the request's partition's active memories (and archived ones with
        ``include_archived``); a provisional or revoked memory is never in the pool. Ranking is
        ``engine.retrieval.rank``'s, never the store's.
        """
        ...

    def substring_search(
        self, partition: Partition, *, query_text: str, limit: int, exclude_session: str | None,
        created_before: datetime, include_archived: bool = False,
    ) -> list[Candidate]:
        """The last-resort mode: active memories containing any of the query's words as plain substrings."""
        ...


class StateRecords(Protocol):
    """Lifecycle state (status, strength signals) of memories, and the fact records it governs."""

    def get_states(self, memory_ids: Sequence[str]) -> dict[str, MemoryState]:
        """Stored states by memory id; a memory without one is active with default signals."""
        ...

    def put_states(self, states: Sequence[MemoryState]) -> None:
        """Replace states (the memories must exist: NotFound otherwise). Status decides what search sees."""
        ...

    def list_facts(self, partition: Partition) -> list[Memory]:
        """Every fact record of a partition, whatever its status, oldest first."""
        ...

    def write_fact(self, fact: Memory, vector: NDArray[np.float32] | None, state: MemoryState,
                   replaced: Sequence[MemoryState]) -> None:
        """Store a new fact with its state and, in the same step, the states of what it replaces (the revoked
        facts and the memories marked stale). A store with transactions commits them together. One without
        writes the new fact first and the replacements after, so a crash between leaves both facts active,
        which readers resolve by keeping the newest active fact of each slot (``engine.facts.current``)."""
        ...


class MemoryStore(TurnLog, MemoryRecords, TraceRecords, SearchIndex, StateRecords, Protocol):
    """One backend holding all five (the embedded store, Weaviate). Services take the narrow ports they use;
    the composing ones (the engine, ingest, the writer, lifecycle) take this."""

    def purge(self) -> None:
        """Make what was deleted unrecoverable from the store's own files (a database's write-ahead log keeps
        page images until a checkpoint). Erasure calls it before it answers with a receipt."""
        ...

    def close(self) -> None: ...


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
                reason: str, at: datetime) -> ReviewItem: ...

    def item(self, item_id: str) -> ReviewItem:
        """NotFound for an unknown id."""
        ...

    def open_items(self, partitions: list[str] | None = None, *, decision: Decision | None = "pending",
                   limit: int = 100) -> list[ReviewItem]:
        """Items in proposal order, of ``partitions`` (None: every one) with ``decision`` (None: any)."""
        ...

    def is_pending(self, memory_id: str, kind: ReviewKind) -> bool: ...

    def decide(self, item_id: str, decision: Decision, *, by: str, at: datetime) -> ReviewItem:
        """A pending item is kept or rejected, a kept one reverted; InvalidInput for any other move."""
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

    def close(self) -> None: ...


# -- tuning profiles: versioned, with who changed them and why ---------------------------------------------------


class TuningVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    profile: TuningProfile
    author: str
    note: str
    saved_at: datetime


class NoChange(Conflict):
    """A save whose values equal the version in force (409): it would be a version that changes nothing."""

    def __init__(self, version: int) -> None:
        super().__init__(f"no change: the values equal version {version}, the one in force; change a value first")
        self.version = version


class Profiles(Protocol):
    """Where the services read a character's tuning profile: ``engine.domain.tuning.ProfileSource`` in memory,
    or a ``ProfileStore``."""

    def profile_for(self, character_id: str) -> TuningProfile:
        """The version in force (the defaults for a character never tuned)."""
        ...

    def set(self, profile: TuningProfile) -> None:
        """Make ``profile`` the character's (for a store: a new version unless it is the one in force already)."""
        ...


@runtime_checkable  # the API's dependency injection checks the value it is given against the annotation
class ProfileStore(Profiles, Protocol):
    """Tuning profiles that persist every version (``engine.domain.tuning.ProfileSource`` plus the history).
    A character never tuned has the defaults, version 1."""

    @property
    def defaults(self) -> TuningProfile: ...

    def profile_for(self, character_id: str) -> TuningProfile:
        """The version in force."""
        ...

    def save(self, profile: TuningProfile, *, author: str, note: str) -> TuningProfile:
        """Store ``profile`` as the character's next version and return it. InvalidInput for a blank ``note``;
        NoChange when the values are the ones in force."""
        ...

    def history(self, character_id: str) -> list[TuningVersion]:
        """Every readable version, newest first (empty when never tuned)."""
        ...

    def close(self) -> None: ...


# -- API keys: the records behind the API's key policy (``api.auth.KeyStore``) ----------------------------------
# The engine only keeps them: organisations and roles are opaque strings here, validated by the API; the secret is
# only ever its SHA-256. Every time is timezone-aware.


@dataclass(frozen=True)
class KeyRecord:
    """One API key as stored: everything but the secret itself."""

    key_id: str
    org: str
    role: str
    secret_sha256: str
    label: str
    created_at: datetime
    revoked_at: datetime | None = None


class KeyRecords(Protocol):
    """Where API keys persist. Every read goes to the backend (nothing is cached), so what one process writes,
    a revocation above all, holds at once for every process sharing the backend."""

    def insert(self, record: KeyRecord) -> None:
        """Store a new key. Conflict when its ``key_id`` is taken."""
        ...

    def get(self, key_id: str) -> KeyRecord | None:
        """The key with this id, revoked or not; None for an unknown id."""
        ...

    def all(self) -> list[KeyRecord]:
        """Every key, revoked ones included, oldest first (by ``created_at``, then ``key_id``)."""
        ...

    def revoke(self, key_id: str, at: datetime) -> KeyRecord | None:
        """Mark the key revoked at ``at`` and return it as stored: a key already revoked keeps its first time.
        None for an unknown id (nothing is written)."""
        ...

    def issue_once(self, purpose: str, record: KeyRecord, before_commit: Callable[[], None]) -> KeyRecord:
        """The one key ever issued for ``purpose``, in one write transaction held against every other process.

        When a key was issued for ``purpose`` already, it is returned as stored (revoked or not) and nothing is
        written. Otherwise a store from before purposes were recorded may hold it by its organisation and label
        alone: the newest key with ``record``'s ``org`` and ``label`` is adopted (registered for ``purpose``) and
        returned. Otherwise ``record`` is inserted and registered for ``purpose``, ``before_commit()`` is called
        (it writes the secret somewhere) and the transaction commits; if ``before_commit`` raises, nothing is
        stored and the exception passes through. ``record`` was issued exactly when the returned key has its
        ``key_id``."""
        ...

    def close(self) -> None: ...
