"""The embedded default store: SQLite for durable records, brute-force numpy and an in-memory BM25 index per
(character, user) partition for stage one.

Companion memory is partitioned by design (one user with one character holds thousands of memories, not
millions), so an exact scan of one partition's vectors is both simpler and faster than an ANN index at this
scale. SQLite is the source of truth; the per-partition indexes are rebuilt from it on first use after a
restart, so nothing but SQLite needs to be durable.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from engine.adapters.embedded_store.index import PartitionIndex
from engine.adapters.embedded_store.schema import (
    MEMORY_COLUMNS,
    MEMORY_WIDTH,
    MIGRATIONS,
    SCHEMA,
    TURN_COLUMNS,
    memory_from_row,
    ts,
    turn_from_row,
)
from engine.adapters.sqlite_transaction import Readers, immediate
from engine.domain.errors import BackendUnavailable, ConfigurationError, InvalidInput, NotFound
from engine.domain.models import (
    Candidate,
    Memory,
    MemoryState,
    Partition,
    Trace,
    TraceStatus,
    Turn,
)
from engine.domain.ports import LegScores, SearchRequest, ToneCandidates

Record = TypeVar("Record", Trace, MemoryState)
Found = TypeVar("Found")


class EmbeddedStore:
    """In-process, durable store. Thread-safe: one lock serialises writes (SQLite's and the indexes'); reads run
    beside them, on read connections of their own and under the lock of the one partition index they read."""

    backend = "embedded"

    def __init__(self, data_dir: Path, *, embedding_model: str, dimension: int) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._path = data_dir / "feltsense.sqlite3"
        self._db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # Erased content must not survive in free pages of the file: SQLite overwrites what it deletes with zeros.
        self._db.execute("PRAGMA secure_delete=ON")
        self._migrate()
        self._db.executescript(SCHEMA)
        self._write = threading.RLock()
        self._readers = Readers(self._path)
        self._dimension = dimension
        self._indexes: dict[tuple[str, str], PartitionIndex] = {}
        self._loaded: dict[str, PartitionIndex] = {}  # memory id -> the loaded partition index holding it
        self._check_model(embedding_model, dimension)

    def _migrate(self) -> None:
        for table, column, declaration in MIGRATIONS:
            columns = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if columns and column not in columns:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    def _check_model(self, model: str, dimension: int) -> None:
        # Vectors of two embedding models never mix in one index: a store is bound to the model that filled it.
        found = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not found:
            self._db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("embedding_model", model), ("dimension", str(dimension))],
            )
        elif found.get("embedding_model") != model or found.get("dimension") != str(dimension):
            raise ConfigurationError(
                f"the store at {self._path} holds vectors of {found.get('embedding_model')} "
                f"({found.get('dimension')}-d); this engine embeds with {model} ({dimension}-d). "
                "Keep the model that wrote it, use another data directory, or re-embed."
            )

    # -- writes -------------------------------------------------------------------------------------------

    def add_turns(self, turns: Sequence[Turn]) -> list[bool]:
        new: list[bool] = []
        with self._write, immediate(self._db):
            for turn in turns:
                cursor = self._db.execute(
                    "INSERT OR IGNORE INTO turns (turn_id, session_id, character_id, user_id, role, text, "
                    "timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (turn.turn_id, turn.session_id, turn.character_id, turn.user_id, turn.role, turn.text,
                     ts(turn.timestamp)),
                )
                new.append(cursor.rowcount == 1)
        return new

    def add_memories(self, memories: Sequence[Memory], vectors: NDArray[np.float32] | None) -> None:
        if vectors is not None and len(memories) != len(vectors):
            raise InvalidInput(f"{len(memories)} memories but {len(vectors)} vectors", field="vectors")
        if vectors is not None and len(memories) and vectors.shape[1] != self._dimension:
            raise InvalidInput(f"vectors are {vectors.shape[1]}-d, the store holds {self._dimension}-d")
        with self._write:
            with immediate(self._db):
                added: list[int] = []
                for i, memory in enumerate(memories):
                    if self._insert_memory(memory, None if vectors is None else vectors[i]):
                        added.append(i)
            for i in added:
                self._index_added(memories[i], None if vectors is None else vectors[i])

    def _insert_memory(self, memory: Memory, vector: NDArray[np.float32] | None) -> bool:
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO memories (memory_id, turn_id, session_id, character_id, user_id, "
            "text, context, created_at, vector, kind, scope, fact, preceding) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (memory.memory_id, memory.turn_id, memory.session_id, memory.character_id,
             memory.user_id, memory.text, memory.context, ts(memory.created_at),
             None if vector is None else np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
             memory.kind, memory.scope, None if memory.fact is None else memory.fact.model_dump_json(),
             memory.preceding),
        )
        return cursor.rowcount == 1

    def _index_added(self, memory: Memory, vector: NDArray[np.float32] | None) -> None:
        index = self._indexes.get((memory.character_id, memory.user_id))
        if index is not None:
            with index.lock:
                index.add(memory, vector)
            self._loaded[memory.memory_id] = index

    def set_vectors(self, memory_ids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        if len(memory_ids) != len(vectors):
            raise InvalidInput(f"{len(memory_ids)} ids but {len(vectors)} vectors", field="vectors")
        with self._write:
            with immediate(self._db):
                self._db.executemany(
                    "UPDATE memories SET vector = ? WHERE memory_id = ?",
                    [(np.ascontiguousarray(v, dtype=np.float32).tobytes(), m)
                     for m, v in zip(memory_ids, vectors, strict=True)],
                )
            for memory_id, vector in zip(memory_ids, vectors, strict=True):
                index = self._loaded.get(memory_id)
                if index is not None:
                    with index.lock:
                        index.set_vector(memory_id, vector)

    def unembedded(self, limit: int) -> list[Memory]:
        rows = self._readers.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE vector IS NULL ORDER BY seq LIMIT ?", (limit,))
        return [memory_from_row(r) for r in rows]

    def put_traces(self, traces: Sequence[Trace]) -> None:
        with self._write:
            with immediate(self._db):
                for trace in traces:
                    cursor = self._db.execute(
                        "INSERT INTO traces (memory_id, character_id, user_id, status, kind, intensity, valence, "
                        "body) SELECT memory_id, character_id, user_id, ?, ?, ?, ?, ? FROM memories "
                        "WHERE memory_id = ? ON CONFLICT (memory_id) DO UPDATE SET status = excluded.status, "
                        "kind = excluded.kind, intensity = excluded.intensity, valence = excluded.valence, "
                        "body = excluded.body",
                        (trace.status.value, trace.kind.value, trace.intensity, trace.valence,
                         trace.model_dump_json(), trace.memory_id),
                    )
                    if cursor.rowcount != 1:
                        raise NotFound(f"no memory {trace.memory_id!r} to write a trace beside")
            for trace in traces:
                index = self._loaded.get(trace.memory_id)
                if index is not None:
                    with index.lock:
                        index.set_trace(trace)

    def delete_memories(self, memory_ids: Sequence[str]) -> None:
        """Forget memories and their traces (their turns stay). Ids that are not stored are ignored."""
        if not memory_ids:
            return
        with self._write:
            placeholders = ",".join("?" * len(memory_ids))
            owners = {
                (r[0], r[1]) for r in self._db.execute(
                    f"SELECT character_id, user_id FROM memories WHERE memory_id IN ({placeholders})",
                    list(memory_ids),
                )
            }
            said = self._db.execute(
                f"SELECT session_id, text FROM memories WHERE memory_id IN ({placeholders})", list(memory_ids)
            ).fetchall()
            with immediate(self._db):
                # A forgotten turn's words leave the lexical document of the turn after it too.
                self._db.executemany("UPDATE memories SET preceding = '' WHERE session_id = ? AND preceding = ?",
                                     [(session_id, text) for session_id, text in said])
                self._db.execute(f"DELETE FROM traces WHERE memory_id IN ({placeholders})", list(memory_ids))
                self._db.execute(f"DELETE FROM states WHERE memory_id IN ({placeholders})", list(memory_ids))
                self._db.execute(f"DELETE FROM memories WHERE memory_id IN ({placeholders})", list(memory_ids))
            # The in-memory indexes are append-only: drop the affected ones and rebuild them on next use.
            for key in owners:
                index = self._indexes.pop(key, None)
                if index is not None:
                    self._loaded = {m: i for m, i in self._loaded.items() if i is not index}

    def mark_session_closed(self, session_id: str, closed_at: datetime) -> None:
        with self._write:
            self._db.execute(
                "INSERT INTO sessions (session_id, closed_at) VALUES (?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET closed_at = excluded.closed_at",
                (session_id, ts(closed_at)),
            )

    # -- reads --------------------------------------------------------------------------------------------

    def closed_sessions(self, session_ids: Sequence[str]) -> set[str]:
        rows = self._readers.execute(
            f"SELECT session_id FROM sessions WHERE session_id IN ({','.join('?' * len(session_ids))})",
            list(session_ids),
        )
        return {row[0] for row in rows}

    def get_turns(self, session_id: str) -> list[Turn]:
        rows = self._readers.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ? ORDER BY seq", (session_id,))
        return [turn_from_row(r) for r in rows]

    def session_memories(self, session_id: str) -> list[Memory]:
        rows = self._readers.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'turn' ORDER BY seq",
            (session_id,))
        return [memory_from_row(r) for r in rows]

    def list_memories(self, partition: Partition, *, offset: int, limit: int) -> list[Memory]:
        rows = self._readers.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE character_id = ? AND user_id = ? "
            "ORDER BY seq LIMIT ? OFFSET ?",
            (partition.character_id, partition.user_id, limit, offset))
        return [memory_from_row(r) for r in rows]

    def get_memories(self, memory_ids: Sequence[str], *, current: bool = False) -> list[Memory]:
        # ``current`` changes nothing here: one process owns the store, so its index is never behind an erasure.
        if not memory_ids:
            return []
        cached = self._cached(memory_ids, lambda found: [index.memories[row] for index, row in found])
        if cached is not None:
            return cached
        rows = self._readers.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE memory_id IN ({','.join('?' * len(memory_ids))})",
            list(memory_ids))
        by_id = {r[0]: memory_from_row(r) for r in rows}
        return [by_id[m] for m in memory_ids if m in by_id]

    def get_vectors(self, memory_ids: Sequence[str]) -> NDArray[np.float32]:
        if not memory_ids:
            return np.zeros((0, self._dimension), dtype=np.float32)
        missing = np.full(self._dimension, np.nan, dtype=np.float32)
        vectors = self._cached(memory_ids, lambda found: np.stack(  # recall asks for its candidates' every turn (MMR)
            [index.vectors[row] if index.has_vector(row) else missing for index, row in found]))
        if vectors is not None:
            return vectors
        rows = dict(self._readers.execute(
            f"SELECT memory_id, vector FROM memories WHERE memory_id IN ({','.join('?' * len(memory_ids))})",
            list(memory_ids)))
        return np.stack([missing if rows.get(m) is None else np.frombuffer(rows[m], dtype=np.float32)
                         for m in memory_ids])

    def get_traces(self, memory_ids: Sequence[str]) -> dict[str, Trace]:
        return self._records(memory_ids, "traces", Trace, lambda index: index.traces)

    def _records(self, memory_ids: Sequence[str], table: str, model: type[Record],
                 held: Callable[[PartitionIndex], Mapping[int, Record]]) -> dict[str, Record]:
        """The traces or states (``table``) of ``memory_ids``, by memory id: from the loaded indexes (``held``)
        when they hold every id, else the JSON bodies in SQLite."""
        if not memory_ids:
            return {}
        cached = self._cached(memory_ids, lambda found: {
            record.memory_id: record for index, row in found if (record := held(index).get(row)) is not None})
        if cached is not None:
            return cached
        rows = self._readers.execute(
            f"SELECT body FROM {table} WHERE memory_id IN ({','.join('?' * len(memory_ids))})", list(memory_ids))
        found = [model.model_validate_json(r[0]) for r in rows]
        return {record.memory_id: record for record in found}

    def _cached(self, memory_ids: Sequence[str], read: Callable[[list[tuple[PartitionIndex, int]]], Found],
                ) -> Found | None:
        """``read`` of where each memory sits in a loaded partition index, under the locks of the indexes holding
        them (taken in one order, so two readers never deadlock); None if any is not loaded."""
        found = []
        loaded = self._loaded
        for memory_id in memory_ids:
            index = loaded.get(memory_id)
            row = None if index is None else index.row_of(memory_id)
            if index is None or row is None:
                return None
            found.append((index, row))
        first = found[0][0]  # callers pass at least one id
        if all(index is first for index, _ in found):  # one partition's: what recall asks for
            with first.lock:
                return read(found)
        with contextlib.ExitStack() as locks:
            for _, held in sorted({id(i): i for i, _ in found}.items()):
                locks.enter_context(held.lock)
            return read(found)

    def tone_candidates(
        self, partition: Partition, *, min_intensity: float, max_valence: float
    ) -> ToneCandidates:
        index = self._index(partition)
        with index.lock:
            cached = index.tone_cache.get((min_intensity, max_valence))
            if cached is not None:
                return cached
            rows, intensity, valence, episode = index.emotional_arrays()
            keep = (intensity >= min_intensity) & (valence <= max_valence)
            rows, intensity, valence, episode = rows[keep], intensity[keep], valence[keep], episode[keep]
            _, created = index.arrays()
            found = ToneCandidates(
                memory_ids=[index.memory_ids[row] for row in rows.tolist()],
                episode=episode,
                session_ids=[index.sessions[row] for row in rows.tolist()],
                intensity=intensity,
                valence=valence,
                created_epoch=created[rows],
            )
            index.tone_cache[(min_intensity, max_valence)] = found
            return found

    def pending_sessions(self) -> list[str]:
        rows = self._readers.execute(
            "SELECT DISTINCT m.session_id FROM traces t JOIN memories m ON m.memory_id = t.memory_id "
            "JOIN sessions s ON s.session_id = m.session_id WHERE t.status = ? ORDER BY m.session_id",
            (TraceStatus.PENDING.value,))
        return [r[0] for r in rows]

    def count(self, partition: Partition) -> int:
        rows = self._readers.execute("SELECT COUNT(*) FROM memories WHERE character_id = ? AND user_id = ?",
                                     (partition.character_id, partition.user_id))
        return int(rows[0][0])

    def total(self) -> int:
        return int(self._readers.execute("SELECT COUNT(*) FROM memories", ())[0][0])

    # -- stage one ----------------------------------------------------------------------------------------

    def _index(self, partition: Partition) -> PartitionIndex:
        key = (partition.character_id, partition.user_id)
        index = self._indexes.get(key)
        if index is not None:
            return index
        # Built under the write lock, from the writer connection: no write lands between reading the rows and
        # registering the index (a write after finds the index and adds itself to it).
        with self._write:
            index = self._indexes.get(key)
            if index is not None:
                return index
            index = PartitionIndex(self._dimension)
            rows = self._db.execute(
                f"SELECT {', '.join('m.' + c for c in MEMORY_COLUMNS.split(', '))}, m.vector, t.body, s.body "
                "FROM memories m LEFT JOIN traces t ON t.memory_id = m.memory_id "
                "LEFT JOIN states s ON s.memory_id = m.memory_id "
                "WHERE m.character_id = ? AND m.user_id = ? ORDER BY m.seq",
                key,
            ).fetchall()
            w = MEMORY_WIDTH
            for row in rows:
                memory = memory_from_row(row[:w])
                index.add(memory, None if row[w] is None else np.frombuffer(row[w], dtype=np.float32))
                self._loaded[memory.memory_id] = index
                if row[w + 1] is not None:
                    index.set_trace(Trace.model_validate_json(row[w + 1]))
                if row[w + 2] is not None:
                    index.set_state(MemoryState.model_validate_json(row[w + 2]))
            self._indexes[key] = index
            return index

    def search(self, request: SearchRequest) -> LegScores:
        index = self._index(request.partition)
        with index.lock:
            return index.leg_scores(request)

    def substring_search(
        self, partition: Partition, *, query_text: str, limit: int, exclude_session: str | None,
        created_before: datetime, include_archived: bool = False,
    ) -> list[Candidate]:
        index = self._index(partition)
        with index.lock:
            return index.substring(query_text, limit, exclude_session=exclude_session, created_before=created_before,
                                   include_archived=include_archived)

    # -- lifecycle ----------------------------------------------------------------------------------------

    def get_states(self, memory_ids: Sequence[str]) -> dict[str, MemoryState]:
        return self._records(memory_ids, "states", MemoryState, lambda index: index.states)

    def put_states(self, states: Sequence[MemoryState]) -> None:
        with self._write:
            with immediate(self._db):
                self._put_states(states)
            self._index_states(states)

    def _put_states(self, states: Sequence[MemoryState]) -> None:
        for state in states:
            cursor = self._db.execute(
                "INSERT INTO states (memory_id, status, body) SELECT memory_id, ?, ? FROM memories "
                "WHERE memory_id = ? ON CONFLICT (memory_id) DO UPDATE SET status = excluded.status, "
                "body = excluded.body",
                (state.status, state.model_dump_json(), state.memory_id),
            )
            if cursor.rowcount != 1:
                raise NotFound(f"no memory {state.memory_id!r} to set the state of")

    def _index_states(self, states: Sequence[MemoryState]) -> None:
        for state in states:
            index = self._loaded.get(state.memory_id)
            if index is not None:
                with index.lock:
                    index.set_state(state)

    def list_facts(self, partition: Partition) -> list[Memory]:
        rows = self._readers.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE character_id = ? AND user_id = ? AND kind = 'fact' "
            "ORDER BY seq", (partition.character_id, partition.user_id))
        return [memory_from_row(r) for r in rows]

    def write_fact(self, fact: Memory, vector: NDArray[np.float32] | None, state: MemoryState,
                   replaced: Sequence[MemoryState]) -> None:
        """One SQLite transaction: the new fact, its state and the replaced states commit together or not at all."""
        if fact.kind != "fact" or fact.fact is None:
            raise InvalidInput(f"memory {fact.memory_id!r} is not a fact", field="kind")
        with self._write:
            with immediate(self._db):
                added = self._insert_memory(fact, vector)
                self._put_states([state])
                self._before_replacing(fact)
                self._put_states(replaced)
            if added:
                self._index_added(fact, vector)
            self._index_states([state, *replaced])

    def _before_replacing(self, fact: Memory) -> None:
        """A seam for crash-injection tests: runs between writing a new fact and revoking what it replaces."""

    def delete_turns(self, partition: Partition, turn_ids: Sequence[str] | None = None) -> list[str]:
        where = "character_id = ? AND user_id = ?"
        params: list[str] = [partition.character_id, partition.user_id]
        if turn_ids is not None:
            if not turn_ids:
                return []
            where += f" AND turn_id IN ({','.join('?' * len(turn_ids))})"
            params.extend(turn_ids)
        with self._write, immediate(self._db):
            deleted = [r[0] for r in self._db.execute(f"SELECT turn_id FROM turns WHERE {where} ORDER BY seq",
                                                      params)]
            self._db.execute(f"DELETE FROM turns WHERE {where}", params)
        return deleted

    def find_turns(self, turn_ids: Sequence[str]) -> dict[str, Turn]:
        if not turn_ids:
            return {}
        found: dict[str, Turn] = {}
        with self._readers.connection() as db:
            for chunk in range(0, len(turn_ids), 500):
                ids = list(turn_ids[chunk:chunk + 500])
                for r in db.execute(
                    f"SELECT {TURN_COLUMNS} FROM turns WHERE turn_id IN ({','.join('?' * len(ids))})", ids,
                ):
                    found[r[0]] = turn_from_row(r)
        return found

    def purge(self) -> None:
        """Copy the write-ahead log into the database and truncate it: the WAL keeps every page image written
        since the last checkpoint, so deleted content would otherwise stay readable there."""
        with self._write:
            busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise BackendUnavailable("the store's write-ahead log could not be truncated: another connection "
                                     "reads it", backend="embedded")

    def close(self) -> None:
        with self._write:
            self._readers.close()
            self._db.close()

