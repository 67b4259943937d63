"""One SQLite write transaction, for the adapters that keep their connection in autocommit mode
(``isolation_level=None``) and so begin and end their transactions themselves; and read connections lent beside it."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (the write lock at once, so two writers never deadlock upgrading a read lock), then
    ``COMMIT``; ``ROLLBACK`` on any exception, which is raised again."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


class Readers:
    """Read-only connections to a SQLite file, lent one per read, so reads run beside each other instead of
    queueing on the writer's lock (and, when the file is in WAL mode, beside the writer too). A read sees every
    transaction committed before it began, never a write transaction still open on the writer connection.
    Connections are kept for reuse, as many as reads ever ran at once."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"the database at {self._path} is closed")
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = sqlite3.connect(self._path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False,
                                 isolation_level=None)
        try:
            yield db
        finally:
            with self._lock:
                if self._closed:
                    db.close()
                else:
                    self._idle.append(db)

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query, on a lent connection."""
        with self.connection() as db:
            return db.execute(sql, parameters).fetchall()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for db in self._idle:
                db.close()
            self._idle.clear()
