"""The embedded store's SQLite schema, the columns added since, and how it writes times."""

from __future__ import annotations

from datetime import UTC, datetime

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    character_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    timestamp TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_session ON turns (session_id, seq);
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL UNIQUE,
    turn_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    character_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    context TEXT NOT NULL,
    created_at TEXT NOT NULL,
    vector BLOB,
    kind TEXT NOT NULL DEFAULT 'turn',
    scope TEXT NOT NULL DEFAULT 'user',
    fact TEXT,
    preceding TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS memories_partition ON memories (character_id, user_id, seq);
CREATE INDEX IF NOT EXISTS memories_session ON memories (session_id, seq);
CREATE INDEX IF NOT EXISTS memories_unembedded ON memories (seq) WHERE vector IS NULL;
CREATE INDEX IF NOT EXISTS memories_facts ON memories (character_id, user_id, seq) WHERE kind = 'fact';
CREATE TABLE IF NOT EXISTS traces (
    memory_id TEXT PRIMARY KEY,
    character_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    status TEXT NOT NULL,
    kind TEXT NOT NULL,
    intensity REAL NOT NULL,
    valence REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_status ON traces (status);
CREATE INDEX IF NOT EXISTS traces_tone ON traces (character_id, user_id, kind, intensity);
CREATE TABLE IF NOT EXISTS states (
    memory_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    closed_at TEXT NOT NULL
);
"""


STATUS_CODE = {"active": 0, "archived": 1, "provisional": 2, "revoked": 3}
MIGRATIONS = (  # columns added after the first release, for data directories made before them
    ("memories", "kind", "TEXT NOT NULL DEFAULT 'turn'"),
    ("memories", "scope", "TEXT NOT NULL DEFAULT 'user'"),
    ("memories", "fact", "TEXT"),
    ("memories", "preceding", "TEXT NOT NULL DEFAULT ''"),
)

def ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


