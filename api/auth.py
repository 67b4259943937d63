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

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

Role = Literal["runtime", "director", "evaluator", "admin", "operator"]
ROLES: tuple[Role, ...] = ("runtime", "director", "evaluator", "admin", "operator")
ORG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
"""An organisation is a namespace of the engine's, so it never contains the namespace separator ``:`` and fits
``NAMESPACE_MAX_CHARS`` with it."""
DEV_ORG = "dev"
DEV_LABEL = "development key"
DEV_KEY_FILE = "dev-key"
"""The development key's file, in the data directory (``feltsense serve --dev``)."""

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


class KeyStore(Protocol):
    """Where keys live (``api.sqlite_keys.SqliteKeyStore``). Routes and security depend on this, not on SQLite."""

    def create(self, org: str, role: str, *, label: str = "") -> str:
        """A new key; the returned token is the only time its secret exists in the clear. ValueError for an
        organisation that does not match ``ORG_PATTERN`` or a role not in ``ROLES``."""
        ...

    def list(self) -> list[KeyInfo]:
        """Every key, revoked ones included, oldest first: ids, organisations and roles, never secrets."""
        ...

    def revoke(self, key_id: str) -> KeyInfo:
        """From now on the key authenticates nothing; revoking twice keeps the first time. KeyError for an
        unknown id."""
        ...

    def authenticate(self, token: str) -> Principal | None:
        """Who a token is, or None for a malformed, unknown or revoked one."""
        ...

    def development_key(self, path: Path) -> DevelopmentKey:
        """The development key, issued once (its secret written to ``path``), never again."""
        ...

    def close(self) -> None: ...
