"""The API key store the tests build: ``api.auth.KeyStore`` over SQLite records, the way ``feltsense serve`` opens
``keys.sqlite3`` in its data directory when no PostgreSQL is set."""

from __future__ import annotations

from pathlib import Path

from api.auth import KeyStore
from engine.adapters.sqlite_keys import SqliteKeyRecords


def sqlite_key_store(path: Path) -> KeyStore:
    """A key store over the SQLite file at ``path`` (made when missing)."""
    return KeyStore(SqliteKeyRecords(path))
