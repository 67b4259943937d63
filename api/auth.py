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
key's organisation before it reaches the engine (``api.tenancy.scoped``), so no request can name another
organisation's data.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:  # the standard library only at import: the CLI's parser reads ROLES and stays instant
    from engine.domain.ports import KeyRecord, KeyRecords

Role = Literal["runtime", "director", "evaluator", "admin", "operator"]
ROLES: tuple[Role, ...] = ("runtime", "director", "evaluator", "admin", "operator")
ORG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
"""An organisation is a namespace of the engine's, so it never contains the namespace separator ``:`` and fits
``NAMESPACE_MAX_CHARS`` with it."""
DEV_ORG = "dev"
DEV_LABEL = "development key"
DEV_KEY_FILE = "dev-key"
"""The development key's file, in the data directory (``feltsense serve --dev``)."""
DEV_PURPOSE = "development"
"""What the development key is issued for, in the key records (``KeyRecords.issue_once``)."""
_TOKEN = re.compile(r"^fs_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")

@dataclass(frozen=True)
class Principal:
    """Who is calling: the organisation and role of the key that authenticated the request."""

    org: str
    role: Role
    key_id: str

    @property
    def actor(self) -> str:
        """How the audit trail names the caller: role and key id."""
        return f"{self.role}:{self.key_id}"


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


class KeyStore:
    """The API's keys: the policy (organisations, roles, the token format, hashing) over the records in
    ``engine.domain.ports.KeyRecords`` (``engine.build_key_records``: SQLite in the data directory, or PostgreSQL
    shared by every API process). Routes and security depend on this, not on where the records live. Nothing is
    cached: every ``authenticate`` reads the records, so a revocation through any process holds at once."""

    def __init__(self, records: KeyRecords) -> None:
        self._records = records

    def create(self, org: str, role: str, *, label: str = "") -> str:
        """A new key; the returned token is the only time its secret exists in the clear. ValueError for an
        organisation that does not match ``ORG_PATTERN`` or a role not in ``ROLES``."""
        if not ORG_PATTERN.match(org):
            raise ValueError(f"organisation {org!r} must be 1-63 letters, digits, '_' or '-'")
        if role not in ROLES:
            raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
        record, token = _new_key(org, role, label)
        self._records.insert(record)
        return token

    def list(self) -> list[KeyInfo]:
        """Every key, revoked ones included, oldest first: ids, organisations and roles, never secrets."""
        return [_info(record) for record in self._records.all()]

    def revoke(self, key_id: str) -> KeyInfo:
        """From now on the key authenticates nothing; revoking twice keeps the first time. KeyError for an
        unknown id."""
        record = self._records.revoke(key_id, datetime.now(UTC))
        if record is None:
            raise KeyError(key_id)
        return _info(record)

    def authenticate(self, token: str) -> Principal | None:
        """Who a token is, or None for a malformed, unknown or revoked one."""
        match = _TOKEN.match(token.strip())
        if match is None:
            return None
        key_id, secret = match.groups()
        record = self._records.get(key_id)
        if record is None or record.revoked_at is not None:
            return None
        if not hmac.compare_digest(record.secret_sha256, _digest(secret)):
            return None
        return Principal(org=record.org, role=cast(Role, record.role), key_id=key_id)

    def development_key(self, path: Path) -> DevelopmentKey:
        """The development key (org ``dev``, role runtime): made the first time, with its secret written to
        ``path`` (mode 0600) before it is committed, and never again. Once revoked it stays revoked; a lost file is
        not replaced either, so a key someone revoked or gave up on never comes back by a restart. Services
        starting at once on one key store issue one key."""
        record, token = _new_key(DEV_ORG, "runtime", DEV_LABEL)
        issued = self._records.issue_once(DEV_PURPOSE, record, lambda: _write_secret(path, token))
        if issued.key_id == record.key_id:
            return DevelopmentKey(key_id=record.key_id, token=token, revoked_at=None)
        if issued.revoked_at is not None:
            return DevelopmentKey(key_id=issued.key_id, token=None, revoked_at=_time(issued.revoked_at))
        kept = path.read_text().strip() if path.is_file() else ""
        found = self.authenticate(kept)
        return DevelopmentKey(key_id=issued.key_id, token=kept if found and found.key_id == issued.key_id else None,
                              revoked_at=None)

    def close(self) -> None:
        self._records.close()


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_key(org: str, role: str, label: str) -> tuple[KeyRecord, str]:
    """A new key's record and its token (``fs_<key id>_<secret>``), the secret's only appearance in the clear."""
    from engine.domain.ports import KeyRecord

    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    record = KeyRecord(key_id=key_id, org=org, role=role, secret_sha256=_digest(secret), label=label,
                       created_at=datetime.now(UTC))
    return record, f"fs_{key_id}_{secret}"


def _time(at: datetime) -> str:
    """How a key's times are shown (``feltsense keys list``): ISO 8601 in UTC."""
    return at.astimezone(UTC).isoformat()


def _info(record: KeyRecord) -> KeyInfo:
    return KeyInfo(key_id=record.key_id, org=record.org, role=record.role, label=record.label,
                   created_at=_time(record.created_at),
                   revoked_at=None if record.revoked_at is None else _time(record.revoked_at))


def _write_secret(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode applies only to a new file; an old one keeps its own
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
