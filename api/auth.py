"""API keys, organisations and roles.

A key belongs to one organisation and carries one role:

| role | may |
|---|---|
| runtime | send turns, close sessions, recall, list and delete its users' memories |
| director | read and change tuning profiles |
| evaluator | recall and read memories and traces, read tuning (no writes) |
| admin | manage keys and everything shared; never a user's private memories |
| operator | run the nightly sweep over every organisation (``POST /v1/maintenance/sweep``); nothing else |

An admin's sweep covers its own organisation; an operator runs the service and sweeps every one of them, yet reads
and changes nothing itself (``api.security`` refuses it every other route).

Keys are random 32-byte secrets shown once (``fs_<key id>_<secret>``); only a SHA-256 of the secret is stored.
A fast hash is right here because the secret is random and long, unlike a password: there is nothing to guess.

Tenancy is enforced by construction: every character, session and turn id a key sends is namespaced with the
key's organisation before it reaches the engine (``scoped``), so no request can name another organisation's data.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

Role = Literal["runtime", "director", "evaluator", "admin", "operator"]
ROLES: tuple[Role, ...] = ("runtime", "director", "evaluator", "admin", "operator")
ORG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_TOKEN = re.compile(r"^fs_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")
SEPARATOR = ":"  # organisations never contain it, so the first one ends the organisation
DEV_ORG = "dev"
DEV_LABEL = "development key"
DEV_KEY_FILE = "dev-key"
"""The development key's file, in the data directory (``feltsense serve --dev``)."""

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


@dataclass(frozen=True)
class Principal:
    """Who is calling: the organisation and role of the key that authenticated the request."""

    org: str
    role: Role
    key_id: str


@dataclass(frozen=True)
class KeyInfo:
    """What may be shown about a key: everything but its secret."""

    key_id: str
    org: str
    role: str
    label: str
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class DevelopmentKey:
    """The development key of a key store. It is issued once: ``token`` is None when it is revoked, or when its
    file no longer holds it (the secret exists nowhere else, so it cannot be shown again)."""

    key_id: str
    token: str | None
    revoked_at: str | None


def scoped(org: str, value: str) -> str:
    """An id as the engine stores it: namespaced with the organisation."""
    return f"{org}{SEPARATOR}{value}"


def unscoped(org: str, value: str) -> str:
    prefix = f"{org}{SEPARATOR}"
    return value[len(prefix):] if value.startswith(prefix) else value


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _write_secret(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode applies only to a new file; an old one keeps its own
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")


class KeyStore:
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
