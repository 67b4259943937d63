"""The memory store's ports: the turn log, memory records, traces, the search index and states, which one
backend implements together as ``MemoryStore``; recall's parts take only the ones they read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import (
    Candidate,
    Memory,
    MemoryState,
    Partition,
    Trace,
    Turn,
)
from engine.domain.tuning import RetrievalParams


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

    def total(self) -> int:
        """Memories held across every partition (what ``/metrics`` reports as the store's size)."""
        ...


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

    backend: str  # its name in degraded answers and metrics: "embedded", "weaviate"

    def purge(self) -> None:
        """Make what was deleted unrecoverable from the store's own files (a database's write-ahead log keeps
        page images until a checkpoint). Erasure calls it before it answers with a receipt."""
        ...

    def close(self) -> None: ...
