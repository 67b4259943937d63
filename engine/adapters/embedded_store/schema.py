"""The embedded store's SQLite schema, the columns added since, how it writes times, and how it reads memories and
turns back from rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from engine.domain.models import FactInfo, Memory, Turn

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




MEMORY_COLUMNS = (
    "memory_id, turn_id, session_id, character_id, user_id, text, context, created_at, kind, scope, fact, preceding"
)
MEMORY_WIDTH = 12
"""How many columns ``MEMORY_COLUMNS`` names (a wider row holds more after them)."""
TURN_COLUMNS = "turn_id, session_id, character_id, user_id, role, text, timestamp"


def memory_from_row(row: Sequence[str]) -> Memory:
    """A memory from the ``MEMORY_COLUMNS`` of a row."""
    return Memory(memory_id=row[0], turn_id=row[1], session_id=row[2], character_id=row[3], user_id=row[4],
                  text=row[5], context=row[6], created_at=parse_ts(row[7]), kind=row[8], scope=row[9],
                  fact=None if row[10] is None else FactInfo.model_validate_json(row[10]), preceding=row[11])


def turn_from_row(row: Sequence[str]) -> Turn:
    """A turn from the ``TURN_COLUMNS`` of a row."""
    return Turn(turn_id=row[0], session_id=row[1], character_id=row[2], user_id=row[3], role=row[4], text=row[5],
                timestamp=parse_ts(row[6]))
