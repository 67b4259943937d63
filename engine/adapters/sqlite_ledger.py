"""The ledger in SQLite (``engine.domain.ports.Ledger``).

The audit trail of every lifecycle change, and the review queue of what consolidation proposed.

Both are deliberately apart from the memories they describe. The audit trail outlives them: erasing a memory
removes everything it said, but the record that it existed, when its status changed and how its strength moved
stays. No audit event ever holds content; it holds ids, statuses, strengths and, unless a strict erasure
drops them, proper names (the capitalised anchors of a memory: "Luna", never "dog" or "job").

It also keeps the resolutions the write-time pass found (an earlier memory's anxiety or anger settled by a later
memory, ``traces.resolution``): who resolved whom, when and why, and whether a director undid it. Recall reads
them every turn; they hold ids, registers, times and labels from a fixed vocabulary, never what was said, and
erasure removes them with the memories they name.

It also keeps the tombstones of erased turns (a digest of each id), so that a client retrying a batch it sent
before the erasure gets a 410 instead of storing the erased words again.

SQLite, in the data directory, for every store backend (like the tuning and key stores).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from engine.adapters.sqlite_transaction import Readers, immediate
from engine.domain.errors import BackendUnavailable, NotFound
from engine.domain.models import (
    AuditEvent,
    Decision,
    MemoryState,
    Resolution,
    ReviewItem,
    ReviewKind,
    TrustRecord,
)
from engine.domain.review import applied_after, dump_states, load_states, org_of, trust_move

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    partition TEXT NOT NULL,
    event TEXT NOT NULL,
    at TEXT NOT NULL,
    status TEXT,
    strength REAL,
    names TEXT,
    actor TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_memory ON audit (memory_id, seq);
CREATE INDEX IF NOT EXISTS audit_partition ON audit (partition, seq);
CREATE TABLE IF NOT EXISTS review (
    item_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    partition TEXT NOT NULL,
    proposed_at TEXT NOT NULL,
    score REAL NOT NULL,
    reason TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    decision TEXT NOT NULL DEFAULT 'pending',
    decided_at TEXT,
    decided_by TEXT,
    change_kind TEXT NOT NULL DEFAULT '',
    counterpart TEXT,
    applied TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS review_open ON review (partition, decision, seq);
CREATE TABLE IF NOT EXISTS trust (
    org TEXT NOT NULL,
    change_kind TEXT NOT NULL,
    kept INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0,
    reverted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org, change_kind)
);
CREATE TABLE IF NOT EXISTS recalls (
    recall_id TEXT PRIMARY KEY,
    partition TEXT NOT NULL,
    at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recalls_partition ON recalls (partition, at);
CREATE INDEX IF NOT EXISTS recalls_at ON recalls (at);
CREATE TABLE IF NOT EXISTS partitions (character_id TEXT NOT NULL, user_id TEXT NOT NULL,
                                       PRIMARY KEY (character_id, user_id));
CREATE TABLE IF NOT EXISTS erased_facts (
    fact_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (fact_id, memory_id)
);
CREATE TABLE IF NOT EXISTS resolutions (
    memory_id TEXT NOT NULL,
    resolved_by TEXT NOT NULL,
    partition TEXT NOT NULL,
    register TEXT NOT NULL,
    at TEXT NOT NULL,
    cue TEXT NOT NULL,
    link TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    undone_at TEXT,
    undone_by TEXT,
    PRIMARY KEY (memory_id, resolved_by)
);
CREATE INDEX IF NOT EXISTS resolutions_partition ON resolutions (partition, at);
CREATE TABLE IF NOT EXISTS erased_turns (
    turn_digest TEXT PRIMARY KEY,
    partition TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


def proper_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names an audit event may keep: proper names ("Luna", "Marco"), as anchors keep them capitalised.
    Common words ("brother", "lost", "job") and fact slots say what a memory was about, which is content."""
    return tuple(n for n in dict.fromkeys(names) if n[:1].isupper())


def turn_digest(turn_id: str) -> str:
    """A tombstone holds a digest of the erased turn's id, not the id: enough to refuse it, nothing to read."""
    return hashlib.sha256(turn_id.encode()).hexdigest()


class SqliteLedger:
    """Audit trail, review queue, and the partitions the nightly sweep visits."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else path, check_same_thread=False,
                                   isolation_level=None)
        if path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")  # a recall log write per turn: keep it cheap
            self._db.execute("PRAGMA synchronous=NORMAL")
        # The recall log holds what users said: what erasure deletes is overwritten, not left in free pages.
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.executescript(SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(review)")}
        for column, declared in (("change_kind", "TEXT NOT NULL DEFAULT ''"), ("counterpart", "TEXT"),
                                 ("applied", "TEXT NOT NULL DEFAULT '[]'")):
            if column not in columns:  # a ledger made before the review queue had them
                self._db.execute(f"ALTER TABLE review ADD COLUMN {column} {declared}")
        self._lock = threading.Lock()
        # Reads on every turn (resolutions in force, erased ids) run beside the writes, on read connections of
        # their own; a ledger in memory has one connection, and reads it under the lock.
        self._readers = None if path is None else Readers(path)

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        if self._readers is not None:
            return self._readers.execute(sql, parameters)
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    @classmethod
    def in_memory(cls) -> SqliteLedger:
        """A ledger that lives only as long as this process: for tests and scratch engines (a replay, an
        evaluation run), never for a service, whose audit trail and review queue must survive a restart."""
        return cls(None)

    # -- audit -------------------------------------------------------------------------------------------

    def record(self, memory_id: str, partition: str, event: str, *, at: datetime, actor: str,
               status: str | None = None, strength: float | None = None, names: tuple[str, ...] = ()) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO audit (memory_id, partition, event, at, status, strength, names, actor) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (memory_id, partition, event, at.astimezone(UTC).isoformat(), status, strength,
                 json.dumps(list(proper_names(names))), actor),
            )

    def history(self, memory_id: str) -> list[AuditEvent]:
        return self._events("memory_id", memory_id)

    def erased(self, memory_ids: Sequence[str]) -> set[str]:
        """The ids among ``memory_ids`` whose memory was erased (the audit skeleton remembers that it existed)."""
        if not memory_ids:
            return set()
        rows = self._read(f"SELECT DISTINCT memory_id FROM audit WHERE event = 'erased' AND memory_id IN "
                          f"({','.join('?' * len(memory_ids))})", list(memory_ids))
        return {r[0] for r in rows}

    def partition_history(self, partition: str) -> list[AuditEvent]:
        return self._events("partition", partition)

    def _events(self, column: Literal["memory_id", "partition"], value: str) -> list[AuditEvent]:
        """The audit events whose ``column`` is ``value``, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT memory_id, partition, event, at, status, strength, names, actor FROM audit "
                f"WHERE {column} = ? ORDER BY seq", (value,)
            ).fetchall()
        return [self._event(r) for r in rows]

    @staticmethod
    def _event(row: tuple[Any, ...]) -> AuditEvent:
        return AuditEvent(memory_id=row[0], partition=row[1], event=row[2], at=datetime.fromisoformat(row[3]),
                          status=row[4], strength=row[5],
                          names=None if row[6] is None else tuple(json.loads(row[6])), actor=row[7])

    def restore_partition(self, partition: str, *, audit: Sequence[AuditEvent], resolutions: Sequence[Resolution],
                          review_items: Sequence[ReviewItem]) -> dict[str, int]:
        added = {"audit": 0, "resolutions": 0, "review_items": 0}
        held = {e.identity() for e in self.partition_history(partition)}
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for event in audit:
                    key = event.identity()
                    if key in held:
                        continue
                    held.add(key)
                    self._db.execute(
                        "INSERT INTO audit (memory_id, partition, event, at, status, strength, names, actor) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (event.memory_id, partition, event.event, event.at.astimezone(UTC).isoformat(), event.status,
                         event.strength, None if event.names is None else json.dumps(list(event.names)),
                         event.actor))
                    added["audit"] += 1
                for found in resolutions:
                    cursor = self._db.execute(
                        f"INSERT OR IGNORE INTO resolutions ({self._RESOLUTION}, partition) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (found.memory_id, found.resolved_by, found.register, found.at.astimezone(UTC).isoformat(),
                         found.cue, found.link, found.recorded_at.astimezone(UTC).isoformat(),
                         None if found.undone_at is None else found.undone_at.astimezone(UTC).isoformat(),
                         found.undone_by, partition))
                    added["resolutions"] += cursor.rowcount
                for item in review_items:
                    seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM review").fetchone()[0]
                    cursor = self._db.execute(
                        "INSERT OR IGNORE INTO review (item_id, seq, kind, memory_id, partition, proposed_at, score, "
                        "reason, before, after, decision, decided_at, decided_by, change_kind, counterpart, applied) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (item.item_id, seq, item.kind, item.memory_id, partition,
                         item.proposed_at.astimezone(UTC).isoformat(), item.score, item.reason,
                         item.before.model_dump_json(), item.after.model_dump_json(), item.decision,
                         None if item.decided_at is None else item.decided_at.astimezone(UTC).isoformat(),
                         item.decided_by, item.change_kind or item.kind, item.counterpart, dump_states(item.applied)))
                    added["review_items"] += cursor.rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return added

    def redact_names(self, memory_ids: list[str], *, strict: bool) -> None:
        """At erasure: the erased memories' events keep proper names only (events written before that rule
        held may have more), and a strict erasure drops even those; only that something existed, and how it
        changed, stays."""
        if not memory_ids:
            return
        with self._lock:
            for chunk in range(0, len(memory_ids), 500):
                ids = memory_ids[chunk:chunk + 500]
                placeholders = ",".join("?" * len(ids))
                if strict:
                    self._db.execute(f"UPDATE audit SET names = NULL WHERE memory_id IN ({placeholders})", ids)
                    continue
                rows = self._db.execute(f"SELECT seq, names FROM audit WHERE memory_id IN ({placeholders}) "
                                        "AND names IS NOT NULL", ids).fetchall()
                self._db.executemany("UPDATE audit SET names = ? WHERE seq = ?",
                                     [(json.dumps(list(proper_names(json.loads(names)))), seq)
                                      for seq, names in rows])

    # -- resolutions: earlier tones settled by later memories -----------------------------------------------

    _RESOLUTION = "memory_id, resolved_by, register, at, cue, link, recorded_at, undone_at, undone_by"

    def record_resolutions(self, partition: str, resolutions: Sequence[Resolution]) -> list[Resolution]:
        """Keep resolutions found by the write-time pass, each audited on the memory resolved; returns the new
        ones. Idempotent: a pair (memory, resolver) already recorded, undone or not, is left as it is (a retried
        session does not resolve again what a director undid)."""
        added: list[Resolution] = []
        with self._lock:
            for found in resolutions:
                cursor = self._db.execute(
                    f"INSERT OR IGNORE INTO resolutions ({self._RESOLUTION}, partition) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)",
                    (found.memory_id, found.resolved_by, found.register, found.at.astimezone(UTC).isoformat(),
                     found.cue, found.link, found.recorded_at.astimezone(UTC).isoformat(), partition),
                )
                if cursor.rowcount:
                    added.append(found)
                    self._db.execute(
                        "INSERT INTO audit (memory_id, partition, event, at, status, strength, names, actor) "
                        "VALUES (?, ?, 'resolved', ?, NULL, NULL, '[]', 'system')",
                        (found.memory_id, partition, found.recorded_at.astimezone(UTC).isoformat()),
                    )
        return added

    def resolutions(self, partition: str, *, include_undone: bool = True) -> list[Resolution]:
        """A partition's resolutions, oldest first."""
        where = "" if include_undone else " AND undone_at IS NULL"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._RESOLUTION} FROM resolutions WHERE partition = ?{where} ORDER BY at, memory_id",
                (partition,),
            ).fetchall()
        return [self._resolution(r) for r in rows]

    def resolutions_in_force(self, partition: str, at: datetime) -> dict[str, Resolution]:
        """By memory id, the resolutions not undone whose resolving memory was said by ``at`` (the earliest per
        memory): what recall takes out of tone force on a turn at ``at``."""
        rows = self._read(
            f"SELECT {self._RESOLUTION} FROM resolutions WHERE partition = ? AND undone_at IS NULL AND at <= ? "
            "ORDER BY at DESC, resolved_by DESC", (partition, at.astimezone(UTC).isoformat()))
        return {r.memory_id: r for r in map(self._resolution, rows)}

    def undo_resolutions(self, partition: str, memory_ids: Sequence[str], *, by: str,
                         at: datetime) -> list[Resolution]:
        """Undo every resolution in force of ``memory_ids`` (their tone is back), each audited; returns the
        undone ones. NotFound when none of them has one in force."""
        undone: list[Resolution] = []
        with self._lock:
            for memory_id in dict.fromkeys(memory_ids):
                rows = self._db.execute(
                    f"SELECT {self._RESOLUTION} FROM resolutions WHERE partition = ? AND memory_id = ? "
                    "AND undone_at IS NULL ORDER BY at, resolved_by", (partition, memory_id),
                ).fetchall()
                if not rows:
                    continue
                self._db.execute(
                    "UPDATE resolutions SET undone_at = ?, undone_by = ? WHERE partition = ? AND memory_id = ? "
                    "AND undone_at IS NULL", (at.astimezone(UTC).isoformat(), by, partition, memory_id),
                )
                self._db.execute(
                    "INSERT INTO audit (memory_id, partition, event, at, status, strength, names, actor) "
                    "VALUES (?, ?, 'resolution_undone', ?, NULL, NULL, '[]', ?)",
                    (memory_id, partition, at.astimezone(UTC).isoformat(), by),
                )
                undone += [self._resolution(r).model_copy(update={"undone_at": at.astimezone(UTC), "undone_by": by})
                           for r in rows]
        if not undone:
            raise NotFound(f"no resolution in force for {', '.join(repr(m) for m in memory_ids) or 'no memory'}")
        return undone

    def forget_resolutions(self, partition: str, memory_ids: Sequence[str] | None = None) -> int:
        """At erasure: a partition's resolutions, or those naming one of ``memory_ids`` (resolved or resolving:
        a resolution whose resolving memory is erased is no longer in force)."""
        with self._lock:
            if memory_ids is None:
                return int(self._db.execute("DELETE FROM resolutions WHERE partition = ?", (partition,)).rowcount)
            removed = 0
            ids = list(memory_ids)
            for chunk in range(0, len(ids), 400):
                part = ids[chunk:chunk + 400]
                marks = ",".join("?" * len(part))
                removed += int(self._db.execute(
                    f"DELETE FROM resolutions WHERE partition = ? AND (memory_id IN ({marks}) OR resolved_by IN "
                    f"({marks}))", [partition, *part, *part]).rowcount)
            return removed

    @staticmethod
    def _resolution(row: tuple[Any, ...]) -> Resolution:
        return Resolution(memory_id=row[0], resolved_by=row[1], register=row[2], at=datetime.fromisoformat(row[3]),
                          cue=row[4], link=row[5], recorded_at=datetime.fromisoformat(row[6]),
                          undone_at=None if row[7] is None else datetime.fromisoformat(row[7]), undone_by=row[8])

    # -- tombstones: erased turn ids are never stored again --------------------------------------------------

    def tombstone_turns(self, partition: str, turn_ids: Sequence[str], *, at: datetime) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR IGNORE INTO erased_turns (turn_digest, partition, at) VALUES (?, ?, ?)",
                [(turn_digest(t), partition, at.astimezone(UTC).isoformat()) for t in turn_ids],
            )

    def erased_turns(self, turn_ids: Sequence[str]) -> set[str]:
        """The ids among ``turn_ids`` whose turn was erased."""
        if not turn_ids:
            return set()
        by_digest = {turn_digest(t): t for t in turn_ids}
        found: set[str] = set()
        digests = list(by_digest)
        for chunk in range(0, len(digests), 500):
            part = digests[chunk:chunk + 500]
            found.update(by_digest[r[0]] for r in self._read(
                f"SELECT turn_digest FROM erased_turns WHERE turn_digest IN ({','.join('?' * len(part))})", part))
        return found

    def suppress(self, fact_id: str, sources: Sequence[str]) -> None:
        """A fact erased on its own: the write-time pass must not distil it again from the same memories."""
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO erased_facts (fact_id, memory_id) VALUES (?, ?)",
                                 [(fact_id, m) for m in sources])

    def suppressed(self, fact_id: str, sources: Sequence[str]) -> bool:
        """Whether ``fact_id`` was erased while distilled from one of ``sources``."""
        if not sources:
            return False
        with self._lock:
            row = self._db.execute(
                f"SELECT 1 FROM erased_facts WHERE fact_id = ? AND memory_id IN ({','.join('?' * len(sources))}) "
                "LIMIT 1", [fact_id, *sources]).fetchone()
        return row is not None

    def purge(self) -> None:
        """Truncate the write-ahead log after an erasure: it keeps page images (recall bodies among them) until a
        checkpoint. A ledger in memory has none."""
        with self._lock:
            busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:  # another connection reads the ledger: the log could not be emptied, so no receipt yet
            raise BackendUnavailable("the ledger's write-ahead log could not be truncated: another connection "
                                     "reads it", backend="ledger")

    # -- review queue ------------------------------------------------------------------------------------

    def propose(self, kind: ReviewKind, *, partition: str, before: MemoryState, after: MemoryState, score: float,
                reason: str, at: datetime, change_kind: str = "", counterpart: str | None = None) -> ReviewItem:
        item_id = "r_" + uuid.uuid4().hex[:20]
        with self._lock:
            seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM review").fetchone()[0]
            self._db.execute(
                "INSERT INTO review (item_id, seq, kind, memory_id, partition, proposed_at, score, reason, before, "
                "after, change_kind, counterpart) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (item_id, seq, kind, before.memory_id, partition, at.astimezone(UTC).isoformat(), score, reason,
                 before.model_dump_json(), after.model_dump_json(), change_kind or kind, counterpart),
            )
        return self.item(item_id)

    def item(self, item_id: str) -> ReviewItem:
        with self._lock:
            row = self._db.execute(f"SELECT {self._REVIEW} FROM review WHERE item_id = ?", (item_id,)).fetchone()
        if row is None:
            raise NotFound(f"no review item {item_id!r}")
        return self._item(row)

    def open_items(self, partitions: list[str] | None = None, *, decision: Decision | None = "pending",
                   limit: int = 100) -> list[ReviewItem]:
        clauses: list[str] = []
        params: list[str | int] = []
        if decision is not None:
            clauses.append("decision = ?")
            params.append(decision)
        if partitions is not None:
            if not partitions:
                return []
            clauses.append(f"partition IN ({','.join('?' * len(partitions))})")
            params.extend(partitions)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._REVIEW} FROM review {where} ORDER BY seq LIMIT ?", [*params, limit]
            ).fetchall()
        return [self._item(r) for r in rows]

    def is_pending(self, memory_id: str, kind: ReviewKind) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM review WHERE memory_id = ? AND kind = ? AND decision = 'pending'", (memory_id, kind)
            ).fetchone()
        return row is not None

    def decide(self, item_id: str, decision: Decision, *, by: str, at: datetime,
               applied: Sequence[MemoryState] = ()) -> ReviewItem:
        """Record a decision (``moves``), and a person's in the organisation's trust record, in one write."""
        with self._lock, immediate(self._db):
            row = self._db.execute(f"SELECT {self._REVIEW} FROM review WHERE item_id = ?", (item_id,)).fetchone()
            if row is None:
                raise NotFound(f"no review item {item_id!r}")
            item = self._item(row)
            counted = trust_move(item.decision, decision, item_id)
            undone = decision == "pending"
            self._db.execute(
                "UPDATE review SET decision = ?, decided_at = ?, decided_by = ?, applied = ? WHERE item_id = ?",
                (decision, None if undone else at.astimezone(UTC).isoformat(), None if undone else by,
                 applied_after(decision, applied, dump_states(item.applied)), item_id),
            )
            if counted is not None:
                self._db.execute(
                    f"INSERT INTO trust (org, change_kind, {counted}) VALUES (?, ?, 1) ON CONFLICT (org, change_kind) "
                    f"DO UPDATE SET {counted} = {counted} + 1", (org_of(item.partition), item.change_kind or item.kind))
        return self.item(item_id)

    def trust_record(self, org: str, change_kind: str) -> TrustRecord:
        rows = self._read("SELECT kept, rejected, reverted FROM trust WHERE org = ? AND change_kind = ?",
                          (org, change_kind))
        kept, rejected, reverted = rows[0] if rows else (0, 0, 0)
        return TrustRecord(org=org, change_kind=change_kind, kept=kept, rejected=rejected, reverted=reverted)

    def forget_items(self, memory_ids: Sequence[str]) -> int:
        if not memory_ids:
            return 0
        marks = ",".join("?" * len(memory_ids))
        with self._lock:
            cursor = self._db.execute(f"DELETE FROM review WHERE memory_id IN ({marks}) OR counterpart IN ({marks})",
                                      [*memory_ids, *memory_ids])
        return int(cursor.rowcount)

    _REVIEW = ("item_id, kind, memory_id, partition, proposed_at, score, reason, before, after, decision, "
               "decided_at, decided_by, change_kind, counterpart, applied")

    @staticmethod
    def _item(row: tuple[Any, ...]) -> ReviewItem:
        return ReviewItem(item_id=row[0], kind=row[1], memory_id=row[2], partition=row[3],
                          proposed_at=datetime.fromisoformat(row[4]), score=row[5], reason=row[6],
                          before=MemoryState.model_validate_json(row[7]),
                          after=MemoryState.model_validate_json(row[8]), decision=row[9],
                          decided_at=None if row[10] is None else datetime.fromisoformat(row[10]),
                          decided_by=row[11], change_kind=row[12] or row[1], counterpart=row[13],
                          applied=load_states(row[14]))

    def forget_partition(self, partition: str) -> int:
        """An erased partition's review items go (they hold states, and the queue is not the audit trail)."""
        with self._lock:
            cursor = self._db.execute("DELETE FROM review WHERE partition = ?", (partition,))
        return int(cursor.rowcount)

    # -- the recall log: what the character saw on each turn ----------------------------------------------

    def record_recall(self, recall_id: str, partition: str, at: datetime, body: str) -> None:
        """Keep one turn's recall (memories, tone, the assembled context and its trace) by id. It holds what
        the user said, so erasure removes it with the rest (``forget_recalls``)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO recalls (recall_id, partition, at, body) VALUES (?, ?, ?, ?)",
                             (recall_id, partition, at.astimezone(UTC).isoformat(), body))

    def recall(self, recall_id: str, partition: str) -> str:
        rows = self._read("SELECT body FROM recalls WHERE recall_id = ? AND partition = ?", (recall_id, partition))
        if not rows:
            raise NotFound(f"no recall {recall_id!r}")
        return str(rows[0][0])

    def forget_recalls(self, partition: str, memory_ids: list[str] | None = None) -> int:
        """Erase a partition's recall log, or only the recalls that showed one of ``memory_ids``."""
        with self._lock:
            if memory_ids is None:
                cursor = self._db.execute("DELETE FROM recalls WHERE partition = ?", (partition,))
                return int(cursor.rowcount)
            removed = 0
            for memory_id in memory_ids:
                cursor = self._db.execute("DELETE FROM recalls WHERE partition = ? AND instr(body, ?) > 0",
                                          (partition, memory_id))
                removed += int(cursor.rowcount)
            return removed

    def expire_recalls(self, *, before: datetime, max_bytes: int | None,
                       partition_prefix: str | None = None) -> int:
        """The retention (``RecallLog.expire_recalls``): recalls logged before ``before``, then, for the whole log
        only, the oldest (by ``at``, then ``recall_id``) until the bodies left total at most ``max_bytes`` UTF-8
        bytes. One write transaction; ``secure_delete`` overwrites what it removes, and the sweep purges the
        write-ahead log after it. ``at`` is kept as UTC ISO text, which sorts as time does."""
        cutoff = before.astimezone(UTC).isoformat()
        with self._lock, immediate(self._db):
            if partition_prefix is None:
                removed = int(self._db.execute("DELETE FROM recalls WHERE at < ?", (cutoff,)).rowcount)
            else:
                removed = int(self._db.execute(
                    "DELETE FROM recalls WHERE at < ? AND substr(partition, 1, length(?)) = ?",
                    (cutoff, partition_prefix, partition_prefix)).rowcount)
            if max_bytes is not None and partition_prefix is None:
                # Newest first, a running total of the body sizes: every recall past the bound goes.
                removed += int(self._db.execute(
                    "DELETE FROM recalls WHERE recall_id IN (SELECT recall_id FROM ("
                    "SELECT recall_id, SUM(length(CAST(body AS BLOB))) OVER ("
                    "ORDER BY at DESC, recall_id DESC ROWS UNBOUNDED PRECEDING) AS kept FROM recalls"
                    ") WHERE kept > ?)", (max_bytes,)).rowcount)
        return removed

    # -- partitions ----------------------------------------------------------------------------------------

    def touch(self, character_id: str, user_id: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO partitions (character_id, user_id) VALUES (?, ?)",
                             (character_id, user_id))

    def partitions(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(r[0], r[1]) for r in self._db.execute(
                "SELECT character_id, user_id FROM partitions ORDER BY character_id, user_id")]

    def untouch(self, character_id: str, user_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM partitions WHERE character_id = ? AND user_id = ?",
                             (character_id, user_id))

    def ping(self) -> None:
        with self._lock:
            self._db.execute("SELECT 1").fetchone()

    def close(self) -> None:
        with self._lock:
            if self._readers is not None:
                self._readers.close()
            self._db.close()
