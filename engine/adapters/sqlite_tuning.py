"""Versioned tuning profiles in SQLite (``engine.domain.ports.ProfileStore``): every saved change is a new
version, and the previous ones are kept with who made them and why, so a director can see the history and roll
back.

Profiles are small and change rarely, so they live in their own SQLite file beside the data, whichever memory
store is configured.

Every saved version says why (a note is required) and changes something: saving the values already in force is
refused (``NoChange``), so the history holds no empty versions and a director who forgot to edit is told so.

A stored row that no longer reads as a valid version (written before a bound existed, or damaged) is logged and
skipped, never fatal: the character falls back to its newest valid version, or the defaults.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.adapters.sqlite_transaction import immediate
from engine.domain.errors import InvalidInput
from engine.domain.ports import NoChange, TuningVersion
from engine.domain.tuning import ProfileSource, TuningProfile

log = logging.getLogger("feltsense.tuning")

NOTE_NEEDED = "a note is needed: say why the values change (kept in the history)"

SCHEMA = """
CREATE TABLE IF NOT EXISTS tuning (
    character_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    profile TEXT NOT NULL,
    author TEXT NOT NULL,
    note TEXT NOT NULL,
    saved_at TEXT NOT NULL,
    PRIMARY KEY (character_id, version)
);
"""


class SqliteTuningStore(ProfileSource):
    """A ProfileSource that persists every version. Characters never tuned use the defaults (version 1)."""

    def __init__(self, path: Path, default: TuningProfile | None = None) -> None:
        super().__init__(default=default)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        loaded: set[str] = set()
        for row in self._db.execute(
            "SELECT character_id, version, profile, author, note, saved_at FROM tuning "
            "ORDER BY character_id, version DESC"
        ):
            if row[0] in loaded:
                continue
            version = _read(row)
            if version is not None:
                ProfileSource.set(self, version.profile)
                loaded.add(row[0])

    @property
    def defaults(self) -> TuningProfile:
        """The profile of a character never tuned (version 1, ``character_id`` "default")."""
        return self._default

    def save(self, profile: TuningProfile, *, author: str, note: str) -> TuningProfile:
        """Store ``profile`` as the character's next version (its own version number is ignored). ``InvalidInput``
        when ``note`` is blank; ``NoChange`` when the values are the ones in force."""
        if not note.strip():
            raise InvalidInput(NOTE_NEEDED, field="note")
        with self._lock:
            current = self.profile_for(profile.character_id)
            if _values(profile) == _values(current):
                raise NoChange(current.version)
            # Above every stored version, skipped unreadable ones included: their numbers stay taken.
            (stored,) = self._db.execute(
                "SELECT MAX(version) FROM tuning WHERE character_id = ? AND typeof(version) = 'integer'",
                (profile.character_id,),
            ).fetchone()
            latest = current.version if stored is None else max(current.version, stored)
            saved = profile.model_copy(update={"version": latest + 1})
            now = datetime.now(UTC).isoformat()
            with immediate(self._db):
                if stored is None and current.version == 1:
                    # Keep the defaults as version 1, so the first change can be rolled back too.
                    self._db.execute(
                        "INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?)",
                        (current.character_id, 1, current.model_dump_json(), "defaults", "", now),
                    )
                self._db.execute(
                    "INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?)",
                    (saved.character_id, saved.version, saved.model_dump_json(), author, note, now),
                )
            ProfileSource.set(self, saved)
            return saved

    def set(self, profile: TuningProfile) -> None:
        """Make ``profile`` the character's (a new version unless it is the one in force already)."""
        with contextlib.suppress(NoChange):
            self.save(profile, author="engine", note="set by the engine")

    def history(self, character_id: str) -> list[TuningVersion]:
        """Every readable saved version, newest first (empty when the character was never tuned)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT character_id, version, profile, author, note, saved_at FROM tuning WHERE character_id = ? "
                "ORDER BY version DESC",
                (character_id,),
            ).fetchall()
        return [version for version in map(_read, rows) if version is not None]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _values(profile: TuningProfile) -> dict[str, Any]:
    """The constants a version holds, to tell a change from none. A register set's order means nothing."""
    sections = profile.model_dump(exclude={"character_id", "version"})
    return {name: {key: sorted(value) if isinstance(value, tuple | list) else value for key, value in section.items()}
            for name, section in sections.items()}


def read_version(row: tuple[Any, ...], saved_at: Callable[[Any], datetime]) -> TuningVersion | None:
    """The version a stored row (character id, version, profile JSON, author, note, saved at) holds, its time read
    by ``saved_at``; None (and a warning) when the row does not read as one. Both tuning stores read rows so."""
    character_id, version = row[0], row[1]
    try:
        read = TuningVersion(version=version, profile=TuningProfile.model_validate_json(row[2]), author=row[3],
                             note=row[4], saved_at=saved_at(row[5]))
        if (read.profile.character_id, read.profile.version) != (character_id, read.version):
            raise ValueError(f"the profile inside is {read.profile.character_id!r} version {read.profile.version}")
    except ValidationError as exc:
        reason = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'profile'}: {e['msg']}" for e in exc.errors())
        log.warning("skipping unreadable tuning row: character %r version %r: %s", character_id, version, reason)
        return None
    except (ValueError, TypeError) as exc:
        log.warning("skipping unreadable tuning row: character %r version %r: %s", character_id, version, exc)
        return None
    return read


def _read(row: tuple[Any, ...]) -> TuningVersion | None:
    return read_version(row, datetime.fromisoformat)
