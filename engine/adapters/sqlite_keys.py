"""API keys in one SQLite file (``engine.domain.ports.KeyRecords``), by default ``keys.sqlite3`` in the data
directory: the processes of one host that open the same file share its keys.

The tables and columns are the ones the API's key store has always written (``api_keys``, ``issued_keys``; times as
ISO 8601 text in UTC), so existing key files keep working. Nothing is cached: every read goes to the file, so a
revocation by one process holds at once for every other one. Writes that read first (``revoke``, ``issue_once``)
run in ``BEGIN IMMEDIATE`` transactions, so two processes never interleave them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from engine.adapters.sqlite_transaction import Readers, immediate
from engine.domain.errors import Conflict
from engine.domain.ports import KeyRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    org TEXT NOT NULL,
    role TEXT NOT NULL,
    secret_sha256 TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS issued_keys (
    purpose TEXT PRIMARY KEY,
    key_id TEXT NOT NULL
);
"""

_COLUMNS = "key_id, org, role, secret_sha256, label, created_at, revoked_at"
_BY_ID = f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?"


def _text(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError(f"a key's time must be timezone-aware, not {at!r}")
    return at.astimezone(UTC).isoformat()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _record(row: tuple[str, str, str, str, str, str, str | None]) -> KeyRecord:
    key_id, org, role, secret_sha256, label, created_at, revoked_at = row
    return KeyRecord(key_id=key_id, org=org, role=role, secret_sha256=secret_sha256, label=label,
                     created_at=_time(created_at), revoked_at=None if revoked_at is None else _time(revoked_at))


class SqliteKeyRecords:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._readers = Readers(path)

    def _insert(self, record: KeyRecord) -> None:
        try:
            self._db.execute(
                f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.key_id, record.org, record.role, record.secret_sha256, record.label,
                 _text(record.created_at), None if record.revoked_at is None else _text(record.revoked_at)),
            )
        except sqlite3.IntegrityError:
            raise Conflict(f"key id {record.key_id!r} is taken", ids=(record.key_id,)) from None

    def _get(self, key_id: str) -> KeyRecord | None:
        row = self._db.execute(_BY_ID, (key_id,)).fetchone()
        return None if row is None else _record(row)

    def insert(self, record: KeyRecord) -> None:
        with self._lock:
            self._insert(record)

    def get(self, key_id: str) -> KeyRecord | None:
        # Every request authenticates: on a read connection of its own, beside the other requests (the key file is
        # not in WAL mode, so a key being written still holds reads up for its commit).
        rows = self._readers.execute(_BY_ID, (key_id,))
        return _record(rows[0]) if rows else None

    def all(self) -> list[KeyRecord]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id").fetchall()
        return [_record(row) for row in rows]

    def revoke(self, key_id: str, at: datetime) -> KeyRecord | None:
        with self._lock, immediate(self._db):
            self._db.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                             (_text(at), key_id))
            return self._get(key_id)

    def issue_once(self, purpose: str, record: KeyRecord, before_commit: Callable[[], None]) -> KeyRecord:
        # Immediate: two services starting on one data directory must not both issue one.
        with self._lock, immediate(self._db):
            row = self._db.execute(
                "SELECT k.key_id FROM issued_keys i JOIN api_keys k ON k.key_id = i.key_id WHERE i.purpose = ?",
                (purpose,),
            ).fetchone()
            if row is None:
                # Stores from before issued_keys have their development key only by its label: adopt it, or a
                # key revoked there would be issued afresh.
                row = self._db.execute(
                    "SELECT key_id FROM api_keys WHERE org = ? AND label = ? ORDER BY created_at DESC",
                    (record.org, record.label),
                ).fetchone()
                if row is not None:
                    self._db.execute("INSERT INTO issued_keys (purpose, key_id) VALUES (?, ?)", (purpose, row[0]))
            if row is not None:
                found = self._get(row[0])
                assert found is not None  # read in this transaction
                return found
            self._insert(record)
            self._db.execute("INSERT INTO issued_keys (purpose, key_id) VALUES (?, ?)", (purpose, record.key_id))
            before_commit()  # a key whose before_commit failed is not issued: the transaction rolls back
            return record

    def close(self) -> None:
        with self._lock:
            self._readers.close()
            self._db.close()
