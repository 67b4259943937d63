"""Versioned schema migrations, per component of the control plane.

Each component (``"keys"``, ``"tuning"``, ``"ledger"``) keeps its migrations in its own adapter module, as a
tuple of ``Migration`` numbered 1..n in order, and calls ``migrate(pool, component, MIGRATIONS)`` when it opens.
A migration, once released, is never edited: a change of schema is a new migration at the end.

What has been applied is recorded in ``feltsense_schema_migrations`` (one row per component and version). All of a
component's pending migrations run in one transaction that holds a transaction-level advisory lock derived from the
component's name, so processes starting at once apply each migration exactly once: the first applies them, the
others wait for its commit and find nothing left to do. If anything fails, nothing of that run stays applied.

A database whose component is at a version newer than the code knows (a newer release migrated it) is refused with
``ConfigurationError``: an older release must not write into a schema it does not know.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from engine.adapters.postgres.connection import Pool, transaction
from engine.domain.errors import ConfigurationError

TABLE = "feltsense_schema_migrations"

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS feltsense_schema_migrations (
    component text NOT NULL,
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (component, version)
)
"""


@dataclass(frozen=True)
class Migration:
    """One step of a component's schema: ``sql`` may hold several statements (no parameters)."""

    version: int
    name: str
    sql: str


def lock_key(name: str) -> int:
    """A fixed signed 64-bit advisory-lock key for ``name``, the same in every process and release."""
    digest = hashlib.sha256(f"{TABLE}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _check_numbering(component: str, migrations: Sequence[Migration]) -> None:
    versions = [migration.version for migration in migrations]
    expected = list(range(1, len(versions) + 1))
    if versions != expected:
        raise ValueError(
            f"the {component!r} migrations must be numbered 1..{len(versions)} in order without gaps, "
            f"but are numbered {versions}"
        )


def migrate(pool: Pool, component: str, migrations: Sequence[Migration]) -> list[int]:
    """Apply ``component``'s migrations the database does not have yet, in order; return their versions.

    Raises ``ValueError`` when ``migrations`` are not numbered 1..n, and ``ConfigurationError`` when the
    database is at a newer version of ``component`` than ``migrations`` know. Connection failures raise
    ``BackendUnavailable`` (see ``transaction``).
    """
    if not component:
        raise ValueError("a migrated component needs a name")
    _check_numbering(component, migrations)
    # The table first, under a lock of its own: two components starting at once must not both create it.
    with transaction(pool) as connection:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(""),))
        connection.execute(_CREATE_TABLE)
    with transaction(pool) as connection:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(component),))
        rows = connection.execute(
            "SELECT version FROM feltsense_schema_migrations WHERE component = %s", (component,)
        ).fetchall()
        applied = {int(version) for (version,) in rows}
        known = len(migrations)
        if applied and max(applied) > known:
            raise ConfigurationError(
                f"the database's {component!r} schema is at version {max(applied)}, but this code knows only "
                f"versions up to {known}: a newer feltsense has migrated it; run that release (or a newer one), "
                f"or point FELTSENSE_POSTGRES__URL at another database"
            )
        done: list[int] = []
        for migration in migrations:
            if migration.version in applied:
                continue
            # Migrations are code, written and reviewed with the adapter, never input.
            connection.execute(migration.sql)
            connection.execute(
                "INSERT INTO feltsense_schema_migrations (component, version, name) VALUES (%s, %s, %s)",
                (component, migration.version, migration.name),
            )
            done.append(migration.version)
        return done
