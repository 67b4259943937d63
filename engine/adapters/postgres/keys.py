"""API keys in PostgreSQL (``engine.domain.ports.KeyRecords``): one database shared by every API process, on any
host, so a key created through one process authenticates on all of them.

Nothing is cached: every lookup (``get``, hence every request's authentication) reads the database, so a
revocation through any process holds on every process at once, from its commit on. ``revoke`` is one statement
that keeps the first revocation time. ``issue_once`` runs in one transaction under a transaction-level advisory
lock derived from the purpose, so services starting at once on several hosts issue one key: the first inserts it
and writes its secret before committing, the others wait for that commit and find it.

Tables (migrated as component ``"keys"``): ``keys_api_keys`` (one row per key, only the SHA-256 of its secret)
and ``keys_issued`` (which key was issued for which purpose).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg.errors

from engine.adapters.postgres.connection import open_pool, transaction
from engine.adapters.postgres.migrations import Migration, lock_key, migrate
from engine.domain.errors import Conflict
from engine.domain.ports import KeyRecord

COMPONENT = "keys"

MIGRATIONS = (
    Migration(1, "api keys", """
CREATE TABLE keys_api_keys (
    key_id text PRIMARY KEY,
    org text NOT NULL,
    role text NOT NULL,
    secret_sha256 text NOT NULL,
    label text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX keys_api_keys_created ON keys_api_keys (created_at, key_id);
CREATE INDEX keys_api_keys_org_label ON keys_api_keys (org, label);
CREATE TABLE keys_issued (
    purpose text PRIMARY KEY,
    key_id text NOT NULL REFERENCES keys_api_keys (key_id)
);
"""),
)

_COLUMNS = "key_id, org, role, secret_sha256, label, created_at, revoked_at"


def _aware(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError(f"a key's time must be timezone-aware, not {at!r}")
    return at


def _record(row: tuple[Any, ...]) -> KeyRecord:
    key_id, org, role, secret_sha256, label, created_at, revoked_at = row
    # psycopg gives timestamptz in the session's time zone; keys are told in UTC.
    return KeyRecord(key_id=str(key_id), org=str(org), role=str(role), secret_sha256=str(secret_sha256),
                     label=str(label), created_at=created_at.astimezone(UTC),
                     revoked_at=None if revoked_at is None else revoked_at.astimezone(UTC))


class PostgresKeyRecords:
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 4, timeout_s: float = 10.0) -> None:
        """Connect (``BackendUnavailable`` when the server cannot be reached) and migrate the ``keys`` tables."""
        self._pool = open_pool(url, min_size=min_size, max_size=max_size, timeout_s=timeout_s)
        try:
            migrate(self._pool, COMPONENT, MIGRATIONS)
        except BaseException:
            self._pool.close()
            raise

    def insert(self, record: KeyRecord) -> None:
        try:
            with transaction(self._pool) as connection:
                connection.execute(
                    f"INSERT INTO keys_api_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (record.key_id, record.org, record.role, record.secret_sha256, record.label,
                     _aware(record.created_at),
                     None if record.revoked_at is None else _aware(record.revoked_at)),
                )
        except psycopg.errors.UniqueViolation:
            raise Conflict(f"key id {record.key_id!r} is taken", ids=(record.key_id,)) from None

    def get(self, key_id: str) -> KeyRecord | None:
        with transaction(self._pool) as connection:
            row = connection.execute(f"SELECT {_COLUMNS} FROM keys_api_keys WHERE key_id = %s",
                                     (key_id,)).fetchone()
        return None if row is None else _record(row)

    def all(self) -> list[KeyRecord]:
        with transaction(self._pool) as connection:
            rows = connection.execute(f"SELECT {_COLUMNS} FROM keys_api_keys ORDER BY created_at, key_id").fetchall()
        return [_record(row) for row in rows]

    def revoke(self, key_id: str, at: datetime) -> KeyRecord | None:
        with transaction(self._pool) as connection:
            row = connection.execute(
                f"UPDATE keys_api_keys SET revoked_at = COALESCE(revoked_at, %s) WHERE key_id = %s"
                f" RETURNING {_COLUMNS}",
                (_aware(at), key_id),
            ).fetchone()
        return None if row is None else _record(row)

    def issue_once(self, purpose: str, record: KeyRecord, before_commit: Callable[[], None]) -> KeyRecord:
        with transaction(self._pool) as connection:
            # Held until this transaction ends: a second process waits here and then finds the key issued.
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(f"keys.issue_once:{purpose}"),))
            row = connection.execute(
                f"SELECT {', '.join('k.' + c for c in _COLUMNS.split(', '))} FROM keys_issued i"
                " JOIN keys_api_keys k ON k.key_id = i.key_id WHERE i.purpose = %s",
                (purpose,),
            ).fetchone()
            if row is None:
                # A key made by its label alone (the way the SQLite store once did) is adopted, never doubled.
                row = connection.execute(
                    f"SELECT {_COLUMNS} FROM keys_api_keys WHERE org = %s AND label = %s"
                    " ORDER BY created_at DESC, key_id DESC LIMIT 1",
                    (record.org, record.label),
                ).fetchone()
                if row is not None:
                    connection.execute("INSERT INTO keys_issued (purpose, key_id) VALUES (%s, %s)",
                                       (purpose, row[0]))
            if row is not None:
                return _record(row)
            connection.execute(
                f"INSERT INTO keys_api_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (record.key_id, record.org, record.role, record.secret_sha256, record.label,
                 _aware(record.created_at), None if record.revoked_at is None else _aware(record.revoked_at)),
            )
            connection.execute("INSERT INTO keys_issued (purpose, key_id) VALUES (%s, %s)", (purpose, record.key_id))
            before_commit()  # raising rolls the transaction back: a key whose secret was not written is not issued
            return record

    def close(self) -> None:
        self._pool.close()
