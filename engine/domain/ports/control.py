"""The control plane's other ports: versioned tuning profiles, and the records behind the API's keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from engine.domain.errors import Conflict
from engine.domain.tuning import TuningProfile

# -- tuning profiles: versioned, with who changed them and why ---------------------------------------------------


class TuningVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    profile: TuningProfile
    author: str
    note: str
    saved_at: datetime


class NoChange(Conflict):
    """A save whose values equal the version in force (409): it would be a version that changes nothing."""

    def __init__(self, version: int) -> None:
        super().__init__(f"no change: the values equal version {version}, the one in force; change a value first")
        self.version = version


class Profiles(Protocol):
    """Where the services read a character's tuning profile: ``engine.domain.tuning.ProfileSource`` in memory,
    or a ``ProfileStore``."""

    def profile_for(self, character_id: str) -> TuningProfile:
        """The version in force (the defaults for a character never tuned)."""
        ...

    def set(self, profile: TuningProfile) -> None:
        """Make ``profile`` the character's (for a store: a new version unless it is the one in force already)."""
        ...


@runtime_checkable  # the API's dependency injection checks the value it is given against the annotation
class ProfileStore(Profiles, Protocol):
    """Tuning profiles that persist every version (``engine.domain.tuning.ProfileSource`` plus the history).
    A character never tuned has the defaults, version 1."""

    @property
    def defaults(self) -> TuningProfile: ...

    def profile_for(self, character_id: str) -> TuningProfile:
        """The version in force."""
        ...

    def save(self, profile: TuningProfile, *, author: str, note: str) -> TuningProfile:
        """Store ``profile`` as the character's next version and return it. InvalidInput for a blank ``note``;
        NoChange when the values are the ones in force."""
        ...

    def history(self, character_id: str) -> list[TuningVersion]:
        """Every readable version, newest first (empty when never tuned)."""
        ...

    def close(self) -> None: ...


# -- API keys: the records behind the API's key policy (``api.auth.KeyStore``) ----------------------------------
# The engine only keeps them: organisations and roles are opaque strings here, validated by the API; the secret is
# only ever its SHA-256. Every time is timezone-aware.


@dataclass(frozen=True)
class KeyRecord:
    """One API key as stored: everything but the secret itself."""

    key_id: str
    org: str
    role: str
    secret_sha256: str
    label: str
    created_at: datetime
    revoked_at: datetime | None = None


class KeyRecords(Protocol):
    """Where API keys persist. Every read goes to the backend (nothing is cached), so what one process writes,
    a revocation above all, holds at once for every process sharing the backend."""

    def insert(self, record: KeyRecord) -> None:
        """Store a new key. Conflict when its ``key_id`` is taken."""
        ...

    def get(self, key_id: str) -> KeyRecord | None:
        """The key with this id, revoked or not; None for an unknown id."""
        ...

    def all(self) -> list[KeyRecord]:
        """Every key, revoked ones included, oldest first (by ``created_at``, then ``key_id``)."""
        ...

    def revoke(self, key_id: str, at: datetime) -> KeyRecord | None:
        """Mark the key revoked at ``at`` and return it as stored: a key already revoked keeps its first time.
        None for an unknown id (nothing is written)."""
        ...

    def issue_once(self, purpose: str, record: KeyRecord, before_commit: Callable[[], None]) -> KeyRecord:
        """The one key ever issued for ``purpose``, in one write transaction held against every other process.

        When a key was issued for ``purpose`` already, it is returned as stored (revoked or not) and nothing is
        written. Otherwise a store from before purposes were recorded may hold it by its organisation and label
        alone: the newest key with ``record``'s ``org`` and ``label`` is adopted (registered for ``purpose``) and
        returned. Otherwise ``record`` is inserted and registered for ``purpose``, ``before_commit()`` is called
        (it writes the secret somewhere) and the transaction commits; if ``before_commit`` raises, nothing is
        stored and the exception passes through. ``record`` was issued exactly when the returned key has its
        ``key_id``."""
        ...

    def close(self) -> None: ...
