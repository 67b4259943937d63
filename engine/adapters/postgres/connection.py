"""The connection pool and the one-transaction helper every PostgreSQL adapter uses.

``open_pool`` connects before it returns, so a wrong address or a server that is down fails at startup with the
engine's ``BackendUnavailable``. The message names the host, the port and the database, never the password.
``transaction`` borrows one pooled connection for one transaction: committed when the block ends, rolled back when
it raises. A pool that cannot hand out a connection in time and a connection that breaks mid-transaction raise
``BackendUnavailable`` too; the errors PostgreSQL answers with (a constraint, a syntax error, a serialization
failure or deadlock to retry) pass through as psycopg raised them, for the adapter to translate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeAlias

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from engine.domain.errors import BackendUnavailable, ConfigurationError
from engine.telemetry import span

BACKEND = "postgres"

Connection: TypeAlias = psycopg.Connection[TupleRow]
Pool: TypeAlias = ConnectionPool[Connection]


def describe(url: str) -> str:
    """Where ``url`` points, for messages: ``host:port/dbname``, without the user's password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unparseable PostgreSQL URL"
    host = str(params.get("host") or "the local socket")
    port = str(params.get("port") or "5432")
    dbname = str(params.get("dbname") or params.get("user") or "")
    return f"{host}:{port}/{dbname}" if dbname else f"{host}:{port}"


def _without_password(message: str, url: str) -> str:
    """``message`` with the URL's password starred out (libpq does not quote it; this makes sure)."""
    try:
        password = conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        return message
    return message.replace(str(password), "***") if password else message


def open_pool(url: str, *, min_size: int, max_size: int, timeout_s: float) -> Pool:
    """An opened pool of ``min_size`` to ``max_size`` connections to ``url``, its first connections made.

    Raises ``ConfigurationError`` when ``url`` does not parse and ``BackendUnavailable`` when the server cannot be
    reached or refuses the connection within ``timeout_s``. A pooled connection is checked before it is handed out,
    so one broken by a server restart is replaced rather than returned.
    """
    where = describe(url)
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"the PostgreSQL URL does not parse: {_without_password(str(exc), url)}") from None
    # One direct attempt first: the pool retries quietly until its timeout and reports only that it timed out;
    # libpq's own message says why (refused, unknown host, authentication failed).
    try:
        probe = psycopg.connect(url, connect_timeout=max(1, round(timeout_s)))
    except psycopg.Error as exc:
        reason = _without_password(str(exc).strip(), url)
        raise BackendUnavailable(f"PostgreSQL at {where} cannot be reached: {reason}", backend=BACKEND) from None
    probe.close()
    pool: Pool = ConnectionPool(
        url, min_size=min_size, max_size=max_size, timeout=timeout_s, open=False,
        check=ConnectionPool.check_connection, name=f"feltsense {where}",
    )
    try:
        pool.open(wait=True, timeout=timeout_s)
    except PoolTimeout:
        pool.close()
        raise BackendUnavailable(
            f"PostgreSQL at {where} did not give {min_size} connection(s) within {timeout_s:g} s", backend=BACKEND
        ) from None
    return pool


@contextmanager
def transaction(pool: Pool) -> Iterator[Connection]:
    """One pooled connection in one transaction: committed when the block ends, rolled back when it raises."""
    try:
        with (span("postgresql transaction", {"db.system.name": "postgresql", "feltsense.pool": pool.name or ""}),
              pool.connection() as connection, connection.transaction()):
            yield connection
    except PoolTimeout:
        raise BackendUnavailable(
            f"no PostgreSQL connection was free within {pool.timeout:g} s (pool {pool.name})", backend=BACKEND
        ) from None
    except psycopg.errors.TransactionRollback:
        raise  # a serialization failure or a deadlock: the caller may simply run the transaction again
    except psycopg.OperationalError as exc:
        # The connection broke, or the server cancelled the statement (shutdown, statement timeout).
        raise BackendUnavailable(f"PostgreSQL failed during a transaction: {exc}", backend=BACKEND) from exc
