"""One partition's in-memory index: stage one's arrays and postings, the parsed memories and traces, and the
leg material and substring matches recall reads from them. Rebuilt from SQLite on first use."""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.adapters.embedded_store.schema import STATUS_CODE
from engine.domain.models import (
    REGISTERS,
    Candidate,
    Leg,
    Memory,
    MemoryKind,
    MemoryState,
    Trace,
    TraceStatus,
)
from engine.domain.ports import LegScores, SearchRequest, ToneCandidates
from engine.domain.text import terms, words
from engine.domain.tuning import RetrievalParams
from scoring.fusion import bm25, bm25_idf

POOL_FACTOR = 3  # the vector leg brings this many times params.candidates into the pool, by cosine
LEXICAL_POOL_FACTOR = 5  # and the lexical leg at most this many times, by BM25, when more memories match
TEXT_BLOCK = 1024  # rows per joined text of the substring search (``PartitionIndex._text_blocks``)


@dataclass
class PartitionIndex:
    """Everything recall needs for one partition, in memory: stage one's arrays and postings, and the parsed
    memories and traces (so a recall never parses a row). Append-only; rebuilt from SQLite on first use. Not
    thread-safe by itself: whoever reads or changes it holds ``lock``."""

    dimension: int
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    memories: list[Memory] = field(default_factory=list)
    traces: dict[int, Trace] = field(default_factory=dict)
    emotional: dict[int, Trace] = field(default_factory=dict)  # complete emotional traces: tone rule candidates
    tone_cache: dict[tuple[float, float], ToneCandidates] = field(default_factory=dict)
    average_doc_length: float = 0.0
    memory_ids: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    vectors: NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    size: int = 0
    postings: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)
    _cache: dict[str, tuple[NDArray[np.intp], NDArray[np.float64]]] = field(default_factory=dict)
    _session_codes: dict[str, int] = field(default_factory=dict)
    _rows: dict[str, int] = field(default_factory=dict)
    _facts: dict[int, set[str]] = field(default_factory=dict)
    _joined_texts: list[tuple[str, list[int]]] = field(default_factory=list)
    states: dict[int, MemoryState] = field(default_factory=dict)
    _emotional_arrays: (
        tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]] | None
    ) = None

    # Per-row columns, grown in place (capacity doubles) so a new memory never rebuilds them: row i = memory i.
    _doc_length: NDArray[np.float64] = field(default_factory=lambda: np.zeros(64))
    _created: NDArray[np.float64] = field(default_factory=lambda: np.zeros(64))
    _session_codes_array: NDArray[np.int64] = field(default_factory=lambda: np.zeros(64, dtype=np.int64))
    _has_vector_array: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(64, dtype=bool))  # False: the
    # embedder was down at ingest
    _status_array: NDArray[np.int8] = field(default_factory=lambda: np.zeros(64, dtype=np.int8))  # STATUS_CODE
    _doc_length_total: float = 0.0

    def __post_init__(self) -> None:
        self.vectors = np.zeros((64, self.dimension), dtype=np.float32)

    def _grow(self) -> None:
        capacity = self.vectors.shape[0] * 2
        grown = np.zeros((capacity, self.dimension), dtype=np.float32)
        grown[: self.size] = self.vectors[: self.size]
        self.vectors = grown
        for name in ("_doc_length", "_created", "_session_codes_array", "_has_vector_array", "_status_array"):
            old = getattr(self, name)
            column = np.zeros(capacity, dtype=old.dtype)
            column[: self.size] = old[: self.size]
            setattr(self, name, column)

    @property
    def created_epoch(self) -> NDArray[np.float64]:
        return self._created[: self.size]

    def has_vector(self, row: int) -> bool:
        return bool(self._has_vector_array[row])

    def add(self, memory: Memory, vector: NDArray[np.float32] | None) -> None:
        row = self.size
        if row == self.vectors.shape[0]:
            self._grow()
        if vector is not None:
            self.vectors[row] = vector
        self._has_vector_array[row] = vector is not None
        self.size += 1
        self.memory_ids.append(memory.memory_id)
        self.memories.append(memory)
        self._rows[memory.memory_id] = row
        self.sessions.append(memory.session_id)
        self._session_codes_array[row] = self._session_codes.setdefault(memory.session_id, len(self._session_codes))
        self.texts.append(memory.text)
        self._created[row] = memory.created_at.timestamp()
        self._doc_length[row] = 0.0
        self._status_array[row] = STATUS_CODE["active"]
        self._index_text(row, memory.text)
        if memory.preceding:  # the turn before joins the lexical document: an answer is found by its question
            self._index_text(row, memory.preceding)

    def set_state(self, state: MemoryState) -> None:
        row = self._rows.get(state.memory_id)
        if row is not None:
            self.states[row] = state
            self._status_array[row] = STATUS_CODE[state.status]

    def embedded_mask(self) -> NDArray[np.bool_]:
        return self._has_vector_array[: self.size]

    def emotional_arrays(
        self,
    ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        """Rows with complete emotional traces, with intensity, valence and an episode key, cached until a trace
        changes."""
        if self._emotional_arrays is None:
            rows = np.array(sorted(self.emotional), dtype=np.intp)
            traces = [self.emotional[row] for row in rows.tolist()]
            codes = [int(self._session_codes_array[row]) * len(REGISTERS) + REGISTERS.index(t.register)
                     for row, t in zip(rows.tolist(), traces, strict=True)]
            self._emotional_arrays = (
                rows,
                np.array([t.intensity for t in traces], dtype=np.float64),
                np.array([t.valence for t in traces], dtype=np.float64),
                np.array(codes, dtype=np.int64),
            )
        return self._emotional_arrays

    def set_vector(self, memory_id: str, vector: NDArray[np.float32]) -> None:
        row = self._rows.get(memory_id)
        if row is not None:
            self.vectors[row] = vector
            self._has_vector_array[row] = True

    def row_of(self, memory_id: str) -> int | None:
        return self._rows.get(memory_id)

    def set_trace(self, trace: Trace) -> None:
        row = self._rows.get(trace.memory_id)
        if row is None:
            return
        self.traces[row] = trace
        self._emotional_arrays = None
        self.tone_cache.clear()
        if trace.status is TraceStatus.COMPLETE and trace.kind is MemoryKind.EMOTIONAL:
            self.emotional[row] = trace
        else:
            self.emotional.pop(row, None)
        # Teach the lexical leg the words of the memory's facts, once per fact sentence.
        seen = self._facts.setdefault(row, set())
        for fact in trace.facts:
            if fact not in seen:
                seen.add(fact)
                self._index_text(row, fact)

    def _index_text(self, row: int, text: str) -> None:
        counts = Counter(terms(text))
        added = float(sum(counts.values()))
        self._doc_length[row] += added
        self._doc_length_total += added
        for term, tf in counts.items():
            rows, tfs = self.postings.setdefault(term, ([], []))
            if rows and rows[-1] == row:
                tfs[-1] += float(tf)
            else:
                rows.append(row)
                tfs.append(float(tf))
            self._cache.pop(term, None)

    def arrays(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each row's document length and creation time (views: valid until the next memory is added)."""
        self.average_doc_length = self._doc_length_total / self.size if self.size else 0.0
        return self._doc_length[: self.size], self._created[: self.size]

    def posting(self, term: str) -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
        cached = self._cache.get(term)
        if cached is None:
            raw = self.postings.get(term)
            if raw is None:
                return None
            rows, tfs = np.asarray(raw[0], dtype=np.intp), np.asarray(raw[1], dtype=np.float64)
            if len(rows) > 1 and bool((np.diff(rows) <= 0).any()):
                # A fact sentence indexed after later memories puts its row out of order, maybe twice: one
                # entry per row, ascending, with the term frequencies summed.
                order = np.argsort(rows, kind="stable")
                rows, starts = np.unique(rows[order], return_index=True)
                tfs = np.add.reduceat(tfs[order], starts)
            cached = (rows, tfs)
            self._cache[term] = cached
        return cached

    def allowed(
        self, exclude_session: str | None, created_before: datetime, include_archived: bool = False
    ) -> tuple[NDArray[np.bool_], int]:
        """Rows recall may see: active (or archived, for an audit), not from the caller's current session, not
        from after the turn's time."""
        _, created = self.arrays()
        allowed = created <= created_before.timestamp()
        status = self._status_array[: self.size]
        visible = status == STATUS_CODE["active"]
        if include_archived:
            visible |= status == STATUS_CODE["archived"]
        allowed &= visible
        excluded = 0
        if exclude_session is not None and exclude_session in self._session_codes:
            in_session = self._session_codes_array[: self.size] == self._session_codes[exclude_session]
            excluded = int(np.count_nonzero(in_session & allowed))
            allowed &= ~in_session
        return allowed, excluded

    def leg_scores(self, request: SearchRequest) -> LegScores:
        """Stage one's leg material over this partition (``MemoryStore.search``)."""
        query_vector, query_terms, params = request.query_vector, request.query_terms, request.params
        n = self.size
        if n == 0:
            return LegScores.empty(len(query_terms))
        allowed, excluded = self.allowed(request.exclude_session, request.created_before, request.include_archived)
        doc_length, _ = self.arrays()
        postings = [self.posting(term) for term in query_terms]
        in_pool = np.zeros(n, dtype=bool)
        self._lexical_pool(postings, request.term_weights, allowed, params, in_pool)
        cosine = np.full(n, np.nan)
        if query_vector is not None:
            embedded = allowed & self.embedded_mask()
            if embedded.any():
                # One product over the whole matrix (no copy of the rows), then the rows recall may see.
                every = (self.vectors[:n] @ query_vector.astype(np.float32)).astype(np.float64)
                cosine = np.where(embedded, every, np.nan)
                # The pool: every lexical match, and the best by cosine. A memory outside it has neither a
                # query term nor a cosine among the best ``pool`` and cannot rank above those that do.
                rows = np.flatnonzero(embedded)
                pool = min(len(rows), params.candidates * POOL_FACTOR)
                scores = every[rows]
                best = rows[np.argpartition(-scores, pool - 1)[:pool]] if pool < len(rows) else rows
                in_pool[best] = True
        in_pool &= allowed
        rows = np.flatnonzero(in_pool)  # ascending: ingest order breaks ties
        tf = np.zeros((len(rows), len(query_terms)))
        for j, posting in enumerate(postings):
            if posting is not None:
                where = np.searchsorted(rows, posting[0])
                found = where < len(rows)
                found[found] = rows[where[found]] == posting[0][found]
                tf[where[found], j] = posting[1][found]
        return LegScores(
            memory_ids=[self.memory_ids[r] for r in rows.tolist()],
            cosine=cosine[rows],
            term_frequency=tf,
            doc_length=doc_length[rows],
            document_frequency=np.array([0.0 if p is None else float(len(p[0])) for p in postings]),
            documents=n,
            average_doc_length=self.average_doc_length,
            excluded_current_session=excluded,
        )

    def _lexical_pool(
        self, postings: Sequence[tuple[NDArray[np.intp], NDArray[np.float64]] | None],
        term_weights: Sequence[float] | None, allowed: NDArray[np.bool_], params: RetrievalParams,
        in_pool: NDArray[np.bool_],
    ) -> None:
        """Mark the lexical leg's part of the pool: every visible memory with a query term, or, when there are more
        than ``LEXICAL_POOL_FACTOR`` times ``params.candidates`` of them (a long window says many words), the best
        that many by weighted BM25 (the same kernel recall ranks with)."""
        found = [(j, p) for j, p in enumerate(postings) if p is not None]
        if not found:
            return
        rows = np.concatenate([p[0] for _, p in found])
        bound = params.candidates * LEXICAL_POOL_FACTOR
        matched = np.zeros(self.size, dtype=bool)
        matched[rows] = True
        matched &= allowed
        if int(matched.sum()) <= bound:
            in_pool |= matched
            return
        doc_length, _ = self.arrays()
        scores = np.zeros(self.size)
        for j, (posting_rows, tf) in found:
            weight = 1.0 if term_weights is None else float(term_weights[j])
            idf = float(bm25_idf(np.array(float(len(posting_rows))), self.size))
            np.add.at(scores, posting_rows, weight * bm25(tf, doc_length[posting_rows], idf=idf,
                                                           average_doc_length=self.average_doc_length,
                                                           k1=params.bm25_k1, b=params.bm25_b))
        scores[~matched] = -1.0
        in_pool[np.argpartition(-scores, bound - 1)[:bound]] = True

    def substring(
        self, query_text: str, limit: int, *, exclude_session: str | None, created_before: datetime,
        include_archived: bool,
    ) -> list[Candidate]:
        """The last-resort mode over this partition (``MemoryStore.substring_search``): the visible memories whose
        lower-cased text holds the most of the query's words (longer than two letters) as substrings, ingest
        order breaking ties."""
        if self.size == 0:
            return []
        needles = [w for w in dict.fromkeys(words(query_text)) if len(w) > 2]
        if not needles:
            return []
        allowed, _ = self.allowed(exclude_session, created_before, include_archived)
        found = np.zeros(self.size, dtype=np.int64)
        for needle in needles:
            found[self._rows_holding(needle)] += 1
        found[~allowed] = 0
        rows = np.flatnonzero(found)
        rows = rows[np.argsort(-found[rows], kind="stable")][:limit]
        return [Candidate(memory_id=self.memory_ids[row], relevance=int(found[row]) / len(needles),
                          legs=(Leg.SUBSTRING,)) for row in rows.tolist()]

    def _rows_holding(self, needle: str) -> list[int]:
        """The rows whose lower-cased text contains ``needle``, ascending: a search of each block's joined text
        (C speed) rather than a Python loop over every row."""
        held: list[int] = []
        for first, (joined, starts) in zip(range(0, self.size, TEXT_BLOCK), self._text_blocks(), strict=True):
            at = joined.find(needle)
            while at != -1:
                local = bisect.bisect_right(starts, at) - 1
                held.append(first + local)
                at = joined.find(needle, starts[local + 1]) if local + 1 < len(starts) else -1
        return held

    def _text_blocks(self) -> list[tuple[str, list[int]]]:
        """The rows' lower-cased texts joined by NUL (which no needle holds) in blocks of ``TEXT_BLOCK`` rows, with
        each text's start offset. Full blocks are kept; the last, partial one is rebuilt after the next add."""
        blocks = self._joined_texts
        covered = (len(blocks) - 1) * TEXT_BLOCK + len(blocks[-1][1]) if blocks else 0
        if covered < self.size and blocks and len(blocks[-1][1]) < TEXT_BLOCK:
            blocks.pop()  # a partial block that rows have been added after
        for first in range(len(blocks) * TEXT_BLOCK, self.size, TEXT_BLOCK):
            texts = [t.lower() for t in self.texts[first:first + TEXT_BLOCK]]
            starts, offset = [], 0
            for text in texts:
                starts.append(offset)
                offset += len(text) + 1
            blocks.append(("\x00".join(texts), starts))
        return blocks
