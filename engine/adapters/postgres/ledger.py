"""The ledger in PostgreSQL (``engine.domain.ports.Ledger``): one audit trail, review queue, recall log, resolutions,
erasure tombstones and partition registry shared by every API process and worker pointed at the same database.

It behaves as ``engine.adapters.sqlite_ledger.SqliteLedger`` does (the persistence contract tests hold both to the
same answers); what SQLite gets from its one lock, this gets from constraints and row locks:

- every method is one transaction on one pooled connection (``connection.transaction``): a write is visible to
  every process the moment the call returns;
- a resolution pair, a tombstone, a suppressed fact and a registered partition are primary keys written with
  ``INSERT ... ON CONFLICT DO NOTHING``: two processes recording the same pair at once record (and audit) it once;
- ``decide`` and ``undo_resolutions`` lock the rows they change (``SELECT ... FOR UPDATE``) and check them under the
  lock: of two directors deciding the same item at once, the second sees the first's decision and is refused
  (InvalidInput), never applied twice;
- the review queue's order is an identity column; item ids are ``r_`` and 20 hex digits, as in SQLite;
- the retention (``expire_recalls``) takes a transaction-level advisory lock, so sweeps on several hosts run one
  after another and each counts only what it removed.

Tables are prefixed ``ledger_`` (the database may hold the other control-plane components); times are
``timestamptz`` (read back in UTC), recall bodies ``text`` returned exactly as given, with their UTF-8 length kept
beside them for the size bound. Keys and ids are ``COLLATE "C"``: they sort by code point, as SQLite's binary
collation and Python do, whatever the database's default collation.

``purge``: PostgreSQL has nothing like SQLite's ``secure_delete``. What erasure deleted is gone for every reader once
the deletes commit. ``purge`` then runs a plain ``VACUUM`` (never ``FULL``, which would lock the tables) of the tables
erasure deletes from or rewrites, so the dead row versions are pruned from their pages and indexes; it takes no lock
that blocks readers or writers and skips a table another vacuum holds. It does not overwrite bytes: until reused,
freed page space may still hold them, and WAL segments (until recycled), replicas, WAL archives and backups keep
them as long as the operator keeps those. That is the operator's to bound (retention, encrypted storage).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import psycopg
from psycopg_pool import PoolTimeout

from engine.adapters.postgres.connection import BACKEND, Connection, Pool, open_pool, transaction
from engine.adapters.postgres.migrations import Migration, lock_key, migrate
from engine.adapters.sqlite_ledger import proper_names, turn_digest
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

log = logging.getLogger(__name__)

COMPONENT = "ledger"

_SCHEMA_V1 = """
CREATE TABLE ledger_audit (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory_id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    event text NOT NULL,
    at timestamptz NOT NULL,
    status text,
    strength double precision,
    names text[],
    actor text NOT NULL
);
CREATE INDEX ledger_audit_memory ON ledger_audit (memory_id, seq);
CREATE INDEX ledger_audit_partition ON ledger_audit (partition, seq);
CREATE INDEX ledger_audit_erased ON ledger_audit (memory_id) WHERE event = 'erased';

CREATE TABLE ledger_review (
    item_id text COLLATE "C" PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    kind text NOT NULL,
    memory_id text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    proposed_at timestamptz NOT NULL,
    score double precision NOT NULL,
    reason text NOT NULL,
    before text NOT NULL,
    after text NOT NULL,
    decision text NOT NULL DEFAULT 'pending',
    decided_at timestamptz,
    decided_by text
);
CREATE INDEX ledger_review_open ON ledger_review (partition, decision, seq);
CREATE INDEX ledger_review_decision ON ledger_review (decision, seq);
CREATE INDEX ledger_review_pending ON ledger_review (memory_id, kind) WHERE decision = 'pending';

CREATE TABLE ledger_recalls (
    recall_id text COLLATE "C" PRIMARY KEY,
    partition text COLLATE "C" NOT NULL,
    at timestamptz NOT NULL,
    body text NOT NULL,
    body_bytes bigint NOT NULL
);
CREATE INDEX ledger_recalls_partition ON ledger_recalls (partition, at);
CREATE INDEX ledger_recalls_at ON ledger_recalls (at, recall_id);

CREATE TABLE ledger_partitions (
    character_id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (character_id, user_id)
);

CREATE TABLE ledger_erased_facts (
    fact_id text COLLATE "C" NOT NULL,
    memory_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (fact_id, memory_id)
);

CREATE TABLE ledger_resolutions (
    memory_id text COLLATE "C" NOT NULL,
    resolved_by text COLLATE "C" NOT NULL,
    partition text COLLATE "C" NOT NULL,
    register text NOT NULL,
    at timestamptz NOT NULL,
    cue text NOT NULL,
    link text NOT NULL,
    recorded_at timestamptz NOT NULL,
    undone_at timestamptz,
    undone_by text,
    PRIMARY KEY (memory_id, resolved_by)
);
CREATE INDEX ledger_resolutions_partition ON ledger_resolutions (partition, at);
CREATE INDEX ledger_resolutions_resolver ON ledger_resolutions (resolved_by);

CREATE TABLE ledger_erased_turns (
    turn_digest text COLLATE "C" PRIMARY KEY,
    partition text COLLATE "C" NOT NULL,
    at timestamptz NOT NULL
);
"""

_SCHEMA_V2 = """
ALTER TABLE ledger_review ADD COLUMN change_kind text NOT NULL DEFAULT '';
ALTER TABLE ledger_review ADD COLUMN counterpart text COLLATE "C";
ALTER TABLE ledger_review ADD COLUMN applied text NOT NULL DEFAULT '[]';
CREATE INDEX ledger_review_counterpart ON ledger_review (counterpart) WHERE counterpart IS NOT NULL;
CREATE INDEX ledger_review_memory ON ledger_review (memory_id);

CREATE TABLE ledger_trust (
    org text COLLATE "C" NOT NULL,
    change_kind text COLLATE "C" NOT NULL,
    kept bigint NOT NULL DEFAULT 0,
    rejected bigint NOT NULL DEFAULT 0,
    reverted bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (org, change_kind)
);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "the ledger: audit, review queue, recalls, partitions, resolutions, erasure tombstones", _SCHEMA_V1),
    Migration(2, "the review queue's change kinds and counterparts, and earned trust", _SCHEMA_V2),
)

# What ``purge`` vacuums: the tables erasure deletes from (recalls, review items, resolutions) or rewrites (the
# audit trail's names).
_PURGED = ("ledger_recalls", "ledger_audit", "ledger_review", "ledger_resolutions")

_AUDIT = "memory_id, partition, event, at, status, strength, names, actor"
_RESOLUTION = "memory_id, resolved_by, register, at, cue, link, recorded_at, undone_at, undone_by"
_REVIEW = ("item_id, kind, memory_id, partition, proposed_at, score, reason, before, after, decision, "
           "decided_at, decided_by, change_kind, counterpart, applied")


def _utc(at: datetime) -> datetime:
    """A time as the ledger stores it (a naive one is taken as local time, as ``SqliteLedger`` takes it)."""
    return at.astimezone(UTC)


def _read_time(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching the strings that start with ``prefix`` (its wildcards escaped)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresLedger:
    """Audit trail, review queue, recall log, resolutions, tombstones and the partitions the nightly sweep visits,
    in PostgreSQL, shared by every process pointed at the database."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout_s: float = 10.0) -> None:
        pool = open_pool(url, min_size=min_size, max_size=max_size, timeout_s=timeout_s)
        try:
            self._start(pool, owned=True)
        except BaseException:
            pool.close()
            raise

    @classmethod
    def on_pool(cls, pool: Pool) -> PostgresLedger:
        """A ledger on a pool the caller opened (and closes: ``close`` leaves it open); migrates the schema."""
        ledger = cls.__new__(cls)
        ledger._start(pool, owned=False)
        return ledger

    def _start(self, pool: Pool, *, owned: bool) -> None:
        self._pool = pool
        self._owned = owned
        migrate(pool, COMPONENT, MIGRATIONS)

    # -- audit -------------------------------------------------------------------------------------------

    def record(self, memory_id: str, partition: str, event: str, *, at: datetime, actor: str,
               status: str | None = None, strength: float | None = None, names: tuple[str, ...] = ()) -> None:
        with transaction(self._pool) as connection:
            connection.execute(
                f"INSERT INTO ledger_audit ({_AUDIT}) VALUES (%s, %s, %s, %s, %s, %s, %s::text[], %s)",
                (memory_id, partition, event, _utc(at), status, strength, list(proper_names(names)), actor),
            )

    def history(self, memory_id: str) -> list[AuditEvent]:
        return self._events("memory_id", memory_id)

    def erased(self, memory_ids: Sequence[str]) -> set[str]:
        """The ids among ``memory_ids`` whose memory was erased (the audit skeleton remembers that it existed)."""
        if not memory_ids:
            return set()
        with transaction(self._pool) as connection:
            rows = connection.execute(
                "SELECT DISTINCT memory_id FROM ledger_audit WHERE event = 'erased' AND memory_id = ANY(%s::text[])",
                (list(memory_ids),),
            ).fetchall()
        return {r[0] for r in rows}

    def partition_history(self, partition: str) -> list[AuditEvent]:
        return self._events("partition", partition)

    def _events(self, column: Literal["memory_id", "partition"], value: str) -> list[AuditEvent]:
        """The audit events whose ``column`` is ``value``, oldest first."""
        with transaction(self._pool) as connection:
            rows = connection.execute(
                f"SELECT {_AUDIT} FROM ledger_audit WHERE {column} = %s ORDER BY seq", (value,)
            ).fetchall()
        return [self._event(r) for r in rows]

    @staticmethod
    def _event(row: tuple[Any, ...]) -> AuditEvent:
        return AuditEvent(memory_id=row[0], partition=row[1], event=row[2], at=row[3].astimezone(UTC),
                          status=row[4], strength=row[5], names=None if row[6] is None else tuple(row[6]),
                          actor=row[7])

    def restore_partition(self, partition: str, *, audit: Sequence[AuditEvent], resolutions: Sequence[Resolution],
                          review_items: Sequence[ReviewItem]) -> dict[str, int]:
        added = {"audit": 0, "resolutions": 0, "review_items": 0}
        with transaction(self._pool) as connection:
            # One importer of a partition at a time, so two do not both add an event neither saw.
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("feltsense-import:" + partition,))
            held = {self._event(row).identity() for row in connection.execute(
                f"SELECT {_AUDIT} FROM ledger_audit WHERE partition = %s", (partition,)).fetchall()}
            for event in audit:
                key = event.identity()
                if key in held:
                    continue
                held.add(key)
                connection.execute(
                    f"INSERT INTO ledger_audit ({_AUDIT}) VALUES (%s, %s, %s, %s, %s, %s, %s::text[], %s)",
                    (event.memory_id, partition, event.event, _utc(event.at), event.status, event.strength,
                     None if event.names is None else list(event.names), event.actor))
                added["audit"] += 1
            for found in resolutions:
                inserted = connection.execute(
                    f"INSERT INTO ledger_resolutions ({_RESOLUTION}, partition) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (memory_id, resolved_by) DO NOTHING RETURNING 1",
                    (found.memory_id, found.resolved_by, found.register, _utc(found.at), found.cue, found.link,
                     _utc(found.recorded_at), None if found.undone_at is None else _utc(found.undone_at),
                     found.undone_by, partition)).fetchone()
                added["resolutions"] += inserted is not None
            for item in review_items:
                inserted = connection.execute(
                    "INSERT INTO ledger_review (item_id, kind, memory_id, partition, proposed_at, score, reason, "
                    "before, after, decision, decided_at, decided_by, change_kind, counterpart, applied) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (item_id) DO NOTHING "
                    "RETURNING 1",
                    (item.item_id, item.kind, item.memory_id, partition, _utc(item.proposed_at), item.score,
                     item.reason, item.before.model_dump_json(), item.after.model_dump_json(), item.decision,
                     None if item.decided_at is None else _utc(item.decided_at), item.decided_by,
                     item.change_kind or item.kind, item.counterpart, dump_states(item.applied))).fetchone()
                added["review_items"] += inserted is not None
        return added

    def redact_names(self, memory_ids: list[str], *, strict: bool) -> None:
        """At erasure: the erased memories' events keep proper names only (events written before that rule
        held may have more), and a strict erasure drops even those."""
        if not memory_ids:
            return
        with transaction(self._pool) as connection:
            if strict:
                connection.execute("UPDATE ledger_audit SET names = NULL WHERE memory_id = ANY(%s::text[]) "
                                   "AND names IS NOT NULL", (list(memory_ids),))
                return
            # Which names are proper is Python's rule (``proper_names``), not the database's collation's.
            rows = connection.execute(
                "SELECT seq, names FROM ledger_audit WHERE memory_id = ANY(%s::text[]) AND names IS NOT NULL "
                "ORDER BY seq FOR UPDATE", (list(memory_ids),),
            ).fetchall()
            changed = [(kept, seq) for seq, names in rows if (kept := list(proper_names(names))) != list(names)]
            if changed:
                with connection.cursor() as cursor:
                    cursor.executemany("UPDATE ledger_audit SET names = %s::text[] WHERE seq = %s", changed)

    # -- resolutions: earlier tones settled by later memories -----------------------------------------------

    def record_resolutions(self, partition: str, resolutions: Sequence[Resolution]) -> list[Resolution]:
        """Keep resolutions found by the write-time pass, each audited on the memory resolved; returns the new
        ones. Idempotent, across processes too: a pair (memory, resolver) already recorded, undone or not, is
        left as it is (the primary key decides which of two concurrent writers recorded it)."""
        added: list[Resolution] = []
        if not resolutions:
            return added
        with transaction(self._pool) as connection:
            for found in resolutions:
                inserted = connection.execute(
                    f"INSERT INTO ledger_resolutions ({_RESOLUTION}, partition) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, NULL, NULL, %s) "
                    "ON CONFLICT (memory_id, resolved_by) DO NOTHING RETURNING 1",
                    (found.memory_id, found.resolved_by, found.register, _utc(found.at), found.cue, found.link,
                     _utc(found.recorded_at), partition),
                ).fetchone()
                if inserted is not None:
                    added.append(found)
                    connection.execute(
                        f"INSERT INTO ledger_audit ({_AUDIT}) "
                        "VALUES (%s, %s, 'resolved', %s, NULL, NULL, '{}'::text[], 'system')",
                        (found.memory_id, partition, _utc(found.recorded_at)),
                    )
        return added

    def resolutions(self, partition: str, *, include_undone: bool = True) -> list[Resolution]:
        """A partition's resolutions, oldest first."""
        where = "" if include_undone else " AND undone_at IS NULL"
        with transaction(self._pool) as connection:
            rows = connection.execute(
                f"SELECT {_RESOLUTION} FROM ledger_resolutions WHERE partition = %s{where} ORDER BY at, memory_id",
                (partition,),
            ).fetchall()
        return [self._resolution(r) for r in rows]

    def resolutions_in_force(self, partition: str, at: datetime) -> dict[str, Resolution]:
        """By memory id, the resolutions not undone whose resolving memory was said by ``at`` (the earliest per
        memory): what recall takes out of tone force on a turn at ``at``."""
        with transaction(self._pool) as connection:
            rows = connection.execute(
                f"SELECT {_RESOLUTION} FROM ledger_resolutions WHERE partition = %s AND undone_at IS NULL "
                "AND at <= %s ORDER BY at DESC, resolved_by DESC", (partition, _utc(at)),
            ).fetchall()
        return {r.memory_id: r for r in map(self._resolution, rows)}

    def undo_resolutions(self, partition: str, memory_ids: Sequence[str], *, by: str,
                         at: datetime) -> list[Resolution]:
        """Undo every resolution in force of ``memory_ids`` (their tone is back), each audited; returns the
        undone ones. NotFound when none of them has one in force. The rows are locked first: of two directors
        undoing at once, the second finds nothing left in force."""
        undone: list[Resolution] = []
        when = _utc(at)
        with transaction(self._pool) as connection:
            for memory_id in dict.fromkeys(memory_ids):
                rows = connection.execute(
                    f"SELECT {_RESOLUTION} FROM ledger_resolutions WHERE partition = %s AND memory_id = %s "
                    "AND undone_at IS NULL ORDER BY at, resolved_by FOR UPDATE", (partition, memory_id),
                ).fetchall()
                if not rows:
                    continue
                connection.execute(
                    "UPDATE ledger_resolutions SET undone_at = %s, undone_by = %s WHERE partition = %s "
                    "AND memory_id = %s AND undone_at IS NULL", (when, by, partition, memory_id),
                )
                connection.execute(
                    f"INSERT INTO ledger_audit ({_AUDIT}) "
                    "VALUES (%s, %s, 'resolution_undone', %s, NULL, NULL, '{}'::text[], %s)",
                    (memory_id, partition, when, by),
                )
                undone += [self._resolution(r).model_copy(update={"undone_at": when, "undone_by": by})
                           for r in rows]
        if not undone:
            raise NotFound(f"no resolution in force for {', '.join(repr(m) for m in memory_ids) or 'no memory'}")
        return undone

    def forget_resolutions(self, partition: str, memory_ids: Sequence[str] | None = None) -> int:
        """At erasure: a partition's resolutions, or those naming one of ``memory_ids`` (resolved or resolving)."""
        with transaction(self._pool) as connection:
            if memory_ids is None:
                cursor = connection.execute("DELETE FROM ledger_resolutions WHERE partition = %s", (partition,))
            else:
                ids = list(memory_ids)
                if not ids:
                    return 0
                cursor = connection.execute(
                    "DELETE FROM ledger_resolutions WHERE partition = %s AND (memory_id = ANY(%s::text[]) "
                    "OR resolved_by = ANY(%s::text[]))", (partition, ids, ids))
            return max(cursor.rowcount, 0)

    @staticmethod
    def _resolution(row: tuple[Any, ...]) -> Resolution:
        return Resolution(memory_id=row[0], resolved_by=row[1], register=row[2], at=row[3].astimezone(UTC),
                          cue=row[4], link=row[5], recorded_at=row[6].astimezone(UTC),
                          undone_at=_read_time(row[7]), undone_by=row[8])

    # -- tombstones: erased turn ids are never stored again --------------------------------------------------

    def tombstone_turns(self, partition: str, turn_ids: Sequence[str], *, at: datetime) -> None:
        if not turn_ids:
            return
        with transaction(self._pool) as connection, connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO ledger_erased_turns (turn_digest, partition, at) VALUES (%s, %s, %s) "
                "ON CONFLICT (turn_digest) DO NOTHING",
                [(turn_digest(t), partition, _utc(at)) for t in turn_ids],
            )

    def erased_turns(self, turn_ids: Sequence[str]) -> set[str]:
        """The ids among ``turn_ids`` whose turn was erased."""
        if not turn_ids:
            return set()
        by_digest = {turn_digest(t): t for t in turn_ids}
        with transaction(self._pool) as connection:
            rows = connection.execute(
                "SELECT turn_digest FROM ledger_erased_turns WHERE turn_digest = ANY(%s::text[])",
                (list(by_digest),),
            ).fetchall()
        return {by_digest[r[0]] for r in rows}

    def suppress(self, fact_id: str, sources: Sequence[str]) -> None:
        """A fact erased on its own: the write-time pass must not distil it again from the same memories."""
        if not sources:
            return
        with transaction(self._pool) as connection, connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO ledger_erased_facts (fact_id, memory_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(fact_id, m) for m in sources],
            )

    def suppressed(self, fact_id: str, sources: Sequence[str]) -> bool:
        """Whether ``fact_id`` was erased while distilled from one of ``sources``."""
        if not sources:
            return False
        with transaction(self._pool) as connection:
            row = connection.execute(
                "SELECT 1 FROM ledger_erased_facts WHERE fact_id = %s AND memory_id = ANY(%s::text[]) LIMIT 1",
                (fact_id, list(sources)),
            ).fetchone()
        return row is not None

    def purge(self) -> None:
        """After an erasure (its deletes already committed): a plain VACUUM of the tables erasure deletes from, so
        the dead row versions are pruned from their pages and indexes (see the module's docstring for what this
        does not do). It blocks no reader or writer and skips a table another vacuum is working on. Only a lost
        server raises (BackendUnavailable); any other refusal (a role that does not own the tables) is logged."""
        with self._autocommit() as connection:
            skip_locked = " (SKIP_LOCKED)" if connection.info.server_version >= 120000 else ""
            try:
                connection.execute(f"VACUUM{skip_locked} {', '.join(_PURGED)}")
            except psycopg.OperationalError:
                raise
            except psycopg.Error as exc:
                log.warning("the ledger's VACUUM after an erasure was refused: %s", exc)

    @contextmanager
    def _autocommit(self) -> Iterator[Connection]:
        """A pooled connection outside any transaction (VACUUM cannot run in one), returned as it was lent."""
        try:
            with self._pool.connection() as connection:
                connection.autocommit = True
                try:
                    yield connection
                finally:
                    if not connection.closed:
                        connection.autocommit = False
        except PoolTimeout:
            raise BackendUnavailable(
                f"no PostgreSQL connection was free within {self._pool.timeout:g} s (pool {self._pool.name})",
                backend=BACKEND) from None
        except psycopg.OperationalError as exc:
            raise BackendUnavailable(f"PostgreSQL failed during the ledger's purge: {exc}", backend=BACKEND) from exc

    # -- review queue ------------------------------------------------------------------------------------

    def propose(self, kind: ReviewKind, *, partition: str, before: MemoryState, after: MemoryState, score: float,
                reason: str, at: datetime, change_kind: str = "", counterpart: str | None = None) -> ReviewItem:
        item_id = "r_" + uuid.uuid4().hex[:20]
        with transaction(self._pool) as connection:
            row = connection.execute(
                "INSERT INTO ledger_review (item_id, kind, memory_id, partition, proposed_at, score, reason, before, "
                f"after, change_kind, counterpart) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                f"RETURNING {_REVIEW}",
                (item_id, kind, before.memory_id, partition, _utc(at), score, reason, before.model_dump_json(),
                 after.model_dump_json(), change_kind or kind, counterpart),
            ).fetchone()
        assert row is not None
        return self._item(row)

    def item(self, item_id: str) -> ReviewItem:
        with transaction(self._pool) as connection:
            row = connection.execute(f"SELECT {_REVIEW} FROM ledger_review WHERE item_id = %s",
                                     (item_id,)).fetchone()
        if row is None:
            raise NotFound(f"no review item {item_id!r}")
        return self._item(row)

    def open_items(self, partitions: list[str] | None = None, *, decision: Decision | None = "pending",
                   limit: int = 100) -> list[ReviewItem]:
        clauses: list[str] = []
        params: list[Any] = []
        if decision is not None:
            clauses.append("decision = %s")
            params.append(decision)
        if partitions is not None:
            if not partitions:
                return []
            clauses.append("partition = ANY(%s::text[])")
            params.append(list(partitions))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        # SQLite reads a negative LIMIT as no limit; PostgreSQL refuses one, and reads NULL as no limit.
        with transaction(self._pool) as connection:
            rows = connection.execute(
                f"SELECT {_REVIEW} FROM ledger_review {where} ORDER BY seq LIMIT %s",
                [*params, None if limit < 0 else limit],
            ).fetchall()
        return [self._item(r) for r in rows]

    def is_pending(self, memory_id: str, kind: ReviewKind) -> bool:
        with transaction(self._pool) as connection:
            row = connection.execute(
                "SELECT 1 FROM ledger_review WHERE memory_id = %s AND kind = %s AND decision = 'pending' LIMIT 1",
                (memory_id, kind),
            ).fetchone()
        return row is not None

    def decide(self, item_id: str, decision: Decision, *, by: str, at: datetime,
               applied: Sequence[MemoryState] = ()) -> ReviewItem:
        """Record a decision (``engine.domain.review.MOVES``), and a person's in the organisation's trust record.
        The item's row is locked while the move is checked and made: a concurrent decision waits, then sees this
        one."""
        with transaction(self._pool) as connection:
            row = connection.execute(
                "SELECT decision, partition, change_kind, kind, applied FROM ledger_review WHERE item_id = %s "
                "FOR UPDATE",
                (item_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"no review item {item_id!r}")
            counted = trust_move(str(row[0]), decision, item_id)
            undone = decision == "pending"
            kept = applied_after(decision, applied, str(row[4]))
            updated = connection.execute(
                "UPDATE ledger_review SET decision = %s, decided_at = %s, decided_by = %s, applied = %s "
                f"WHERE item_id = %s RETURNING {_REVIEW}",
                (decision, None if undone else _utc(at), None if undone else by, kept, item_id),
            ).fetchone()
            if counted is not None:
                connection.execute(
                    f"INSERT INTO ledger_trust (org, change_kind, {counted}) VALUES (%s, %s, 1) "
                    f"ON CONFLICT (org, change_kind) DO UPDATE SET {counted} = ledger_trust.{counted} + 1",
                    (org_of(str(row[1])), str(row[2] or row[3])))
        assert updated is not None
        return self._item(updated)

    def trust_record(self, org: str, change_kind: str) -> TrustRecord:
        with transaction(self._pool) as connection:
            row = connection.execute(
                "SELECT kept, rejected, reverted FROM ledger_trust WHERE org = %s AND change_kind = %s",
                (org, change_kind)).fetchone()
        kept, rejected, reverted = row if row is not None else (0, 0, 0)
        return TrustRecord(org=org, change_kind=change_kind, kept=kept, rejected=rejected, reverted=reverted)

    def forget_items(self, memory_ids: Sequence[str]) -> int:
        if not memory_ids:
            return 0
        with transaction(self._pool) as connection:
            cursor = connection.execute(
                "DELETE FROM ledger_review WHERE memory_id = ANY(%s::text[]) OR counterpart = ANY(%s::text[])",
                (list(memory_ids), list(memory_ids)))
            return max(cursor.rowcount, 0)

    @staticmethod
    def _item(row: tuple[Any, ...]) -> ReviewItem:
        return ReviewItem(item_id=row[0], kind=row[1], memory_id=row[2], partition=row[3],
                          proposed_at=row[4].astimezone(UTC), score=row[5], reason=row[6],
                          before=MemoryState.model_validate_json(row[7]),
                          after=MemoryState.model_validate_json(row[8]), decision=row[9],
                          decided_at=_read_time(row[10]), decided_by=row[11], change_kind=row[12] or row[1],
                          counterpart=row[13], applied=load_states(row[14]))

    def forget_partition(self, partition: str) -> int:
        """An erased partition's review items go (they hold states, and the queue is not the audit trail)."""
        with transaction(self._pool) as connection:
            cursor = connection.execute("DELETE FROM ledger_review WHERE partition = %s", (partition,))
            return max(cursor.rowcount, 0)

    # -- the recall log: what the character saw on each turn ----------------------------------------------

    def record_recall(self, recall_id: str, partition: str, at: datetime, body: str) -> None:
        """Keep one turn's recall by id (a second one with the same id replaces it, as in SQLite)."""
        with transaction(self._pool) as connection:
            connection.execute(
                "INSERT INTO ledger_recalls (recall_id, partition, at, body, body_bytes) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (recall_id) DO UPDATE SET partition = EXCLUDED.partition, at = EXCLUDED.at, "
                "body = EXCLUDED.body, body_bytes = EXCLUDED.body_bytes",
                (recall_id, partition, _utc(at), body, len(body.encode())),
            )

    def recall(self, recall_id: str, partition: str) -> str:
        with transaction(self._pool) as connection:
            row = connection.execute("SELECT body FROM ledger_recalls WHERE recall_id = %s AND partition = %s",
                                     (recall_id, partition)).fetchone()
        if row is None:
            raise NotFound(f"no recall {recall_id!r}")
        return str(row[0])

    def forget_recalls(self, partition: str, memory_ids: list[str] | None = None) -> int:
        """Erase a partition's recall log, or only the recalls that showed one of ``memory_ids`` (whose body
        holds the id)."""
        with transaction(self._pool) as connection:
            if memory_ids is None:
                cursor = connection.execute("DELETE FROM ledger_recalls WHERE partition = %s", (partition,))
            else:
                if not memory_ids:
                    return 0
                cursor = connection.execute(
                    "DELETE FROM ledger_recalls WHERE partition = %s AND EXISTS ("
                    "SELECT 1 FROM unnest(%s::text[]) AS shown(id) WHERE strpos(body, shown.id) > 0)",
                    (partition, list(memory_ids)))
            return max(cursor.rowcount, 0)

    def expire_recalls(self, *, before: datetime, max_bytes: int | None,
                       partition_prefix: str | None = None) -> int:
        """The retention (``RecallLog.expire_recalls``): recalls logged before ``before``, then, for the whole log
        only, the oldest (by ``at``, then ``recall_id``) until the bodies left total at most ``max_bytes`` UTF-8
        bytes. One transaction, under an advisory lock so that sweeps on several hosts do not interleave."""
        cutoff = _utc(before)
        with transaction(self._pool) as connection:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ledger.expire_recalls"),))
            if partition_prefix is None:
                cursor = connection.execute("DELETE FROM ledger_recalls WHERE at < %s", (cutoff,))
            else:
                cursor = connection.execute(
                    "DELETE FROM ledger_recalls WHERE at < %s AND partition LIKE %s ESCAPE '\\'",
                    (cutoff, _like_prefix(partition_prefix)))
            removed = max(cursor.rowcount, 0)
            if max_bytes is not None and partition_prefix is None:
                # Newest first, a running total of the body sizes: every recall past the bound goes.
                cursor = connection.execute(
                    "DELETE FROM ledger_recalls WHERE recall_id IN (SELECT recall_id FROM ("
                    "SELECT recall_id, SUM(body_bytes) OVER (ORDER BY at DESC, recall_id DESC "
                    "ROWS UNBOUNDED PRECEDING) AS kept FROM ledger_recalls) AS running WHERE kept > %s)",
                    (max_bytes,))
                removed += max(cursor.rowcount, 0)
        return removed

    # -- partitions ----------------------------------------------------------------------------------------

    def touch(self, character_id: str, user_id: str) -> None:
        with transaction(self._pool) as connection:
            connection.execute("INSERT INTO ledger_partitions (character_id, user_id) VALUES (%s, %s) "
                               "ON CONFLICT DO NOTHING", (character_id, user_id))

    def partitions(self) -> list[tuple[str, str]]:
        with transaction(self._pool) as connection:
            rows = connection.execute(
                "SELECT character_id, user_id FROM ledger_partitions ORDER BY character_id, user_id").fetchall()
        return [(r[0], r[1]) for r in rows]

    def untouch(self, character_id: str, user_id: str) -> None:
        with transaction(self._pool) as connection:
            connection.execute("DELETE FROM ledger_partitions WHERE character_id = %s AND user_id = %s",
                               (character_id, user_id))

    def ping(self) -> None:
        with transaction(self._pool) as connection:
            connection.execute("SELECT 1").fetchone()

    def close(self) -> None:
        """Close the pool this ledger opened (one given to ``on_pool`` stays the caller's)."""
        if self._owned:
            self._pool.close()
