"""One SQLite write transaction, for the adapters that keep their connection in autocommit mode
(``isolation_level=None``) and so begin and end their transactions themselves."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator


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
