"""Versioned tuning profiles: every saved change is a new version, and the previous ones are kept with who
made them and why, so a director can see the history and roll back.

Profiles are small and change rarely, so they live in their own SQLite file beside the data, whichever memory
store is configured.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from engine.tuning import ProfileSource, TuningProfile

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


class TuningVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    profile: TuningProfile
    author: str
    note: str
    saved_at: datetime


class TuningStore(ProfileSource):
    """A ProfileSource that persists every version. Characters never tuned use the defaults (version 1)."""

    def __init__(self, path: Path, default: TuningProfile | None = None) -> None:
        super().__init__(default=default)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        for (body,) in self._db.execute(
            "SELECT t.profile FROM tuning t WHERE t.version = "
            "(SELECT MAX(version) FROM tuning WHERE character_id = t.character_id)"
        ):
            ProfileSource.set(self, TuningProfile.model_validate_json(body))

    def save(self, profile: TuningProfile, *, author: str, note: str = "") -> TuningProfile:
        """Store ``profile`` as the character's next version (its own version number is ignored)."""
        with self._lock:
            current = self.profile_for(profile.character_id)
            saved = profile.model_copy(update={"version": current.version + 1})
            now = datetime.now(UTC).isoformat()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if current.version == 1 and not self._stored(profile.character_id):
                    # Keep the defaults as version 1, so the first change can be rolled back too.
                    self._db.execute(
                        "INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?)",
                        (current.character_id, 1, current.model_dump_json(), "defaults", "", now),
                    )
                self._db.execute(
                    "INSERT INTO tuning VALUES (?, ?, ?, ?, ?, ?)",
                    (saved.character_id, saved.version, saved.model_dump_json(), author, note, now),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            ProfileSource.set(self, saved)
            return saved

    def set(self, profile: TuningProfile) -> None:
        self.save(profile, author="engine")

    def history(self, character_id: str) -> list[TuningVersion]:
        """Every saved version, newest first (empty when the character was never tuned)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT version, profile, author, note, saved_at FROM tuning WHERE character_id = ? "
                "ORDER BY version DESC",
                (character_id,),
            ).fetchall()
        return [
            TuningVersion(version=r[0], profile=TuningProfile.model_validate_json(r[1]), author=r[2], note=r[3],
                          saved_at=datetime.fromisoformat(r[4]))
            for r in rows
        ]

    def _stored(self, character_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM tuning WHERE character_id = ? LIMIT 1", (character_id,)).fetchone() \
            is not None

    def close(self) -> None:
        with self._lock:
            self._db.close()
