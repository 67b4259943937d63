"""API keys in SQLite (``api.auth.KeyStore``), in the data directory: only a SHA-256 of each secret is stored."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from api.auth import DEV_LABEL, DEV_ORG, ORG_PATTERN, ROLES, DevelopmentKey, KeyInfo, Principal

_TOKEN = re.compile(r"^fs_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")

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


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _write_secret(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode applies only to a new file; an old one keeps its own
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")


class SqliteKeyStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def create(self, org: str, role: str, *, label: str = "") -> str:
        """A new key; the returned token is the only time its secret exists in the clear."""
        if not ORG_PATTERN.match(org):
            raise ValueError(f"organisation {org!r} must be 1-63 letters, digits, '_' or '-'")
        if role not in ROLES:
            raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
        with self._lock:
            return self._insert(org, role, label)[1]

    def _insert(self, org: str, role: str, label: str) -> tuple[str, str]:
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        self._db.execute(
            "INSERT INTO api_keys (key_id, org, role, secret_sha256, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key_id, org, role, _digest(secret), label, datetime.now(UTC).isoformat()),
        )
        return key_id, f"fs_{key_id}_{secret}"

    def list(self) -> list[KeyInfo]:
        """Every key, revoked ones included, oldest first: ids, organisations and roles, never secrets."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key_id, org, role, label, created_at, revoked_at FROM api_keys ORDER BY created_at, key_id"
            ).fetchall()
        return [KeyInfo(*row) for row in rows]

    def revoke(self, key_id: str) -> KeyInfo:
        """Revoke a key: from now on it authenticates nothing. Revoking twice keeps the first time.
        Raises KeyError for an unknown id."""
        with self._lock:
            self._db.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (datetime.now(UTC).isoformat(), key_id),
            )
        found = [key for key in self.list() if key.key_id == key_id]
        if not found:
            raise KeyError(key_id)
        return found[0]

    def authenticate(self, token: str) -> Principal | None:
        match = _TOKEN.match(token.strip())
        if match is None:
            return None
        key_id, secret = match.groups()
        with self._lock:
            row = self._db.execute(
                "SELECT org, role, secret_sha256 FROM api_keys WHERE key_id = ? AND revoked_at IS NULL", (key_id,)
            ).fetchone()
        if row is None or not hmac.compare_digest(row[2], _digest(secret)):
            return None
        return Principal(org=row[0], role=row[1], key_id=key_id)

    def development_key(self, path: Path) -> DevelopmentKey:
        """The development key (org ``dev``, role runtime): made the first time, with its secret written to
        ``path`` (mode 0600), and never again. Once revoked it stays revoked; a lost file is not replaced either,
        so a key someone revoked or gave up on never comes back by a restart."""
        with self._lock:
            # Immediate: two services starting on one data directory must not both issue one.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                issued = self._issued_development_key()
                if issued is None:
                    key_id, token = self._insert(DEV_ORG, "runtime", DEV_LABEL)
                    self._db.execute("INSERT INTO issued_keys (purpose, key_id) VALUES ('development', ?)", (key_id,))
                    _write_secret(path, token)  # before the commit: a key whose file failed is not issued
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if issued is None:
            return DevelopmentKey(key_id=key_id, token=token, revoked_at=None)
        key_id, revoked_at = issued
        if revoked_at is not None:
            return DevelopmentKey(key_id=key_id, token=None, revoked_at=revoked_at)
        token = path.read_text().strip() if path.is_file() else ""
        found = self.authenticate(token)
        return DevelopmentKey(key_id=key_id, token=token if found and found.key_id == key_id else None,
                              revoked_at=None)

    def _issued_development_key(self) -> tuple[str, str | None] | None:
        """The issued development key's id and revocation time, if one was ever issued."""
        row = self._db.execute(
            "SELECT k.key_id, k.revoked_at FROM issued_keys i JOIN api_keys k ON k.key_id = i.key_id"
            " WHERE i.purpose = 'development'"
        ).fetchone()
        if row is None:
            # Stores from before issued_keys have their development key only by its label: adopt it, or a key
            # revoked there would be issued afresh.
            row = self._db.execute(
                "SELECT key_id, revoked_at FROM api_keys WHERE org = ? AND label = ? ORDER BY created_at DESC",
                (DEV_ORG, DEV_LABEL),
            ).fetchone()
            if row is not None:
                self._db.execute("INSERT INTO issued_keys (purpose, key_id) VALUES ('development', ?)", (row[0],))
        return None if row is None else (row[0], row[1])

    def close(self) -> None:
        with self._lock:
            self._db.close()
