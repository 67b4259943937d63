"""Versioned tuning profiles in PostgreSQL (``engine.domain.ports.ProfileStore``), shared by every API process.

The same store as ``engine.adapters.sqlite_tuning.SqliteTuningStore`` seen through the port: every saved change is
a new version kept with who made it and why; a blank note is refused (``InvalidInput``), and so is a save whose
values are the ones in force (``NoChange``); a character never tuned has the defaults, version 1, stored as
version 1 when its first change is saved; a stored row that no longer reads as a valid version is logged and
skipped, and the character falls back to its newest valid version, or the defaults.

``profile_for`` runs on every recall, so it answers from a per-process cache. The cache is refreshed at most every
``cache_s`` seconds by one cheap query (the newest stored version number of every character, read from the
primary key's index); only characters whose number moved are read again. A save through this instance is in its
cache at once; a save through another process is used within ``cache_s``. While the database cannot be reached
the cache keeps answering with what it last read (logged), and retries at the next refresh.

Saves are serialised per character by a transaction-level advisory lock on a hash of the character id: the
version in force is read inside that transaction, from the database and not from the cache, so two processes
saving one character at once get consecutive versions (never the same one twice, never one lost), and ``NoChange``
compares against the version truly in force.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from engine.adapters.postgres.connection import Connection, Pool, open_pool, transaction
from engine.adapters.postgres.migrations import Migration, migrate
from engine.adapters.sqlite_tuning import NOTE_NEEDED, _values, read_version
from engine.domain.errors import BackendUnavailable, InvalidInput
from engine.domain.ports import NoChange, TuningVersion
from engine.domain.tuning import ProfileSource, TuningProfile

log = logging.getLogger("feltsense.tuning")

COMPONENT = "tuning"

MIGRATIONS = (
    Migration(1, "tuning_versions", """
CREATE TABLE tuning_versions (
    character_id text NOT NULL,
    version bigint NOT NULL,
    profile text NOT NULL,
    author text NOT NULL,
    note text NOT NULL,
    saved_at timestamptz NOT NULL,
    PRIMARY KEY (character_id, version)
)
"""),
)

_COLUMNS = "character_id, version, profile, author, note, saved_at"


def character_lock_key(character_id: str) -> int:
    """The signed 64-bit advisory-lock key that serialises saves of ``character_id``, the same in every process."""
    digest = hashlib.sha256(f"tuning_versions:{character_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresTuningStore(ProfileSource):
    """A ProfileSource that persists every version in PostgreSQL. Characters never tuned use the defaults
    (version 1).

    A save through this instance is used by its next ``profile_for``; a save through another process is used
    within ``cache_s``, default 1 s (the bound on how stale the per-process cache may be).
    """

    def __init__(self, url: str, *, default: TuningProfile | None = None, min_size: int = 1, max_size: int = 4,
                 timeout_s: float = 10.0, cache_s: float = 1.0) -> None:
        super().__init__(default=default)
        if cache_s < 0:
            raise ValueError(f"cache_s must be 0 or more, not {cache_s}")
        self._cache_s = cache_s
        self._pool: Pool = open_pool(url, min_size=min_size, max_size=max_size, timeout_s=timeout_s)
        try:
            migrate(self._pool, COMPONENT, MIGRATIONS)
        except BaseException:
            self._pool.close()
            raise
        self._lock = threading.Lock()  # guards the cache: _profiles, _seen, _checked_at
        self._refreshing = threading.Lock()  # one refresh at a time; the others answer from the cache meanwhile
        self._seen: dict[str, int] = {}  # the newest stored version number by character, unreadable rows included
        self._checked_at = time.monotonic()
        with transaction(self._pool) as connection:
            newest = _newest_numbers(connection)
            loaded = _in_force(connection, newest)
        with self._lock:
            self._seen = newest
            self._profiles = loaded

    @property
    def defaults(self) -> TuningProfile:
        """The profile of a character never tuned (version 1, ``character_id`` "default")."""
        return self._default

    def profile_for(self, character_id: str) -> TuningProfile:
        """The version in force, as of at most ``cache_s`` ago (or of this instance's own last save)."""
        if time.monotonic() - self._checked_at >= self._cache_s:
            self._refresh()
        with self._lock:
            return super().profile_for(character_id)

    def _refresh(self) -> None:
        """Read again the characters whose newest stored version moved since the last refresh."""
        if not self._refreshing.acquire(blocking=False):
            return  # another thread is refreshing: the cache it replaces is at most cache_s old
        try:
            started = time.monotonic()
            if started - self._checked_at < self._cache_s:
                return
            with self._lock:
                seen = dict(self._seen)
            try:
                with transaction(self._pool) as connection:
                    newest = _newest_numbers(connection)
                    moved = {character: number for character, number in newest.items()
                             if seen.get(character) != number}
                    loaded = _in_force(connection, moved)
            except BackendUnavailable as exc:
                log.warning("the tuning profiles could not be refreshed; the cached ones stay in force: %s", exc)
                self._checked_at = started
                return
            with self._lock:
                for character in set(self._seen) - set(newest):  # removed from the database by hand
                    self._profiles.pop(character, None)
                    self._seen.pop(character, None)
                for character, number in moved.items():
                    # A save through this instance meanwhile may have put a newer version in the cache already.
                    if self._seen.get(character, 0) > number:
                        continue
                    self._seen[character] = number
                    if character in loaded:
                        self._profiles[character] = loaded[character]
                    else:
                        self._profiles.pop(character, None)
                self._checked_at = started
        finally:
            self._refreshing.release()

    def save(self, profile: TuningProfile, *, author: str, note: str) -> TuningProfile:
        """Store ``profile`` as the character's next version (its own version number is ignored). ``InvalidInput``
        when ``note`` is blank; ``NoChange`` when the values are the ones in force in the database."""
        if not note.strip():
            raise InvalidInput(NOTE_NEEDED, field="note")
        character_id = profile.character_id
        with transaction(self._pool) as connection:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (character_lock_key(character_id),))
            rows = connection.execute(
                f"SELECT {_COLUMNS} FROM tuning_versions WHERE character_id = %s ORDER BY version DESC",
                (character_id,),
            ).fetchall()
            found = _newest_valid(rows)
            current = found.profile if found is not None else self._default.model_copy(
                update={"character_id": character_id})
            if _values(profile) == _values(current):
                raise NoChange(current.version)
            # Above every stored version, skipped unreadable ones included: their numbers stay taken.
            stored = int(rows[0][1]) if rows else None
            latest = current.version if stored is None else max(current.version, stored)
            saved = profile.model_copy(update={"version": latest + 1})
            now = connection.execute("SELECT now()").fetchone()
            assert now is not None
            if stored is None and current.version == 1:
                # Keep the defaults as version 1, so the first change can be rolled back too.
                connection.execute(
                    f"INSERT INTO tuning_versions ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                    (character_id, 1, current.model_dump_json(), "defaults", "", now[0]),
                )
            connection.execute(
                f"INSERT INTO tuning_versions ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                (character_id, saved.version, saved.model_dump_json(), author, note, now[0]),
            )
        with self._lock:
            if self._seen.get(character_id, 0) < saved.version:
                self._seen[character_id] = saved.version
                self._profiles[character_id] = saved
        return saved

    def set(self, profile: TuningProfile) -> None:
        """Make ``profile`` the character's (a new version unless it is the one in force already)."""
        with contextlib.suppress(NoChange):
            self.save(profile, author="engine", note="set by the engine")

    def history(self, character_id: str) -> list[TuningVersion]:
        """Every readable saved version, newest first (empty when the character was never tuned)."""
        with transaction(self._pool) as connection:
            rows = connection.execute(
                f"SELECT {_COLUMNS} FROM tuning_versions WHERE character_id = %s ORDER BY version DESC",
                (character_id,),
            ).fetchall()
        return [version for version in map(_read, rows) if version is not None]

    def close(self) -> None:
        self._pool.close()


def _newest_numbers(connection: Connection) -> dict[str, int]:
    """The newest stored version number of every character (an index-only scan of the primary key)."""
    rows = connection.execute("SELECT character_id, max(version) FROM tuning_versions GROUP BY character_id")
    return {str(character): int(number) for character, number in rows}


def _in_force(connection: Connection, characters: Iterable[str]) -> dict[str, TuningProfile]:
    """The newest valid version of each of ``characters`` that has one."""
    wanted = list(characters)
    if not wanted:
        return {}
    rows = connection.execute(
        f"SELECT {_COLUMNS} FROM tuning_versions WHERE character_id = ANY(%s) ORDER BY character_id, version DESC",
        (wanted,),
    ).fetchall()
    loaded: dict[str, TuningProfile] = {}
    for row in rows:
        if row[0] in loaded:
            continue
        version = _read(row)
        if version is not None:
            loaded[row[0]] = version.profile
    return loaded


def _newest_valid(rows: Iterable[tuple[Any, ...]]) -> TuningVersion | None:
    """The first of ``rows`` (newest first) that reads as a version."""
    for row in rows:
        version = _read(row)
        if version is not None:
            return version
    return None


def _saved_at(value: Any) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"saved_at is {value!r}, not a time")
    return value


def _read(row: tuple[Any, ...]) -> TuningVersion | None:
    return read_version(row, _saved_at)
