"""The PostgreSQL foundation the control plane's adapters stand on: the test server, the pool, the transaction
helper, the migrations and the settings. Every test takes its own database (``postgres_url``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest
from pydantic import ValidationError

from engine.adapters.postgres.connection import Pool, describe, open_pool, transaction
from engine.adapters.postgres.migrations import Migration, lock_key, migrate
from engine.domain.errors import BackendUnavailable, ConfigurationError
from engine.settings import PostgresSettings, Settings
from tests.servers.postgres import PostgresServer
from tests.servers.process import free_ports

pytestmark = pytest.mark.postgres

LEDGER = (
    Migration(1, "entries", "CREATE TABLE entries (id bigserial PRIMARY KEY, body text NOT NULL)"),
    Migration(2, "entries.created_at", "ALTER TABLE entries ADD COLUMN created_at timestamptz DEFAULT now()"),
    # Several statements in one migration; the row records that it ran.
    Migration(3, "seed", "CREATE INDEX entries_created_at ON entries (created_at); "
                         "INSERT INTO entries (body) VALUES ('migration 3 ran')"),
)


@pytest.fixture
def pool(postgres_url: str) -> Iterator[Pool]:
    pool = open_pool(postgres_url, min_size=1, max_size=4, timeout_s=10)
    yield pool
    pool.close()


def _applied(pool: Pool, component: str) -> list[tuple[int, str]]:
    with transaction(pool) as connection:
        rows = connection.execute(
            "SELECT version, name FROM feltsense_schema_migrations WHERE component = %s ORDER BY version",
            (component,),
        ).fetchall()
    return [(int(version), str(name)) for version, name in rows]


def _count(pool: Pool, query: str) -> int:
    with transaction(pool) as connection:
        row = connection.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def test_the_server_answers_and_gives_each_test_its_own_database(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.url) as connection:
        row = connection.execute("SELECT current_user, current_database(), current_setting('server_encoding')")
        assert row.fetchone() == ("feltsense", "feltsense", "UTF8")
    first, second = postgres_server.fresh_database(), postgres_server.fresh_database()
    assert first != second
    with psycopg.connect(first, autocommit=True) as connection:
        connection.execute("CREATE TABLE only_here (id int)")
    with psycopg.connect(second) as connection:
        assert connection.execute("SELECT to_regclass('only_here')").fetchone() == (None,)


def test_transaction_commits_when_the_block_ends_and_rolls_back_when_it_raises(pool: Pool) -> None:
    with transaction(pool) as connection:
        connection.execute("CREATE TABLE t (v int)")
        connection.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(RuntimeError), transaction(pool) as connection:
        connection.execute("INSERT INTO t VALUES (2)")
        raise RuntimeError("the caller fails mid-transaction")
    with pytest.raises(psycopg.errors.UniqueViolation), transaction(pool) as connection:
        connection.execute("CREATE UNIQUE INDEX t_v ON t (v)")
        connection.execute("INSERT INTO t VALUES (1)")  # PostgreSQL's own errors pass through untranslated
    with transaction(pool) as connection:
        assert connection.execute("SELECT array_agg(v) FROM t").fetchone() == ([1],)
        assert connection.execute("SELECT to_regclass('t_v')").fetchone() == (None,)


def test_a_broken_connection_or_an_exhausted_pool_is_unavailable_and_the_pool_recovers(postgres_url: str) -> None:
    pool = open_pool(postgres_url, min_size=1, max_size=1, timeout_s=0.5)
    try:
        with pytest.raises(BackendUnavailable, match="failed during a transaction"), transaction(pool) as connection:
            connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        with transaction(pool) as connection:  # the broken connection was replaced
            assert connection.execute("SELECT 1").fetchone() == (1,)
        with transaction(pool), pytest.raises(BackendUnavailable, match="no PostgreSQL connection was free"), \
                transaction(pool):
            pass
    finally:
        pool.close()


def test_migrate_applies_each_version_once_and_then_nothing(pool: Pool) -> None:
    assert migrate(pool, "ledger", LEDGER[:2]) == [1, 2]
    assert migrate(pool, "ledger", LEDGER) == [3]
    assert migrate(pool, "ledger", LEDGER) == []
    assert _applied(pool, "ledger") == [(1, "entries"), (2, "entries.created_at"), (3, "seed")]
    assert _count(pool, "SELECT count(*) FROM entries WHERE body = 'migration 3 ran'") == 1
    # Components are counted apart, in the same table.
    assert migrate(pool, "keys", [Migration(1, "keys", "CREATE TABLE api_keys (id text PRIMARY KEY)")]) == [1]
    assert _applied(pool, "keys") == [(1, "keys")]
    assert migrate(pool, "tuning", []) == []


def test_concurrent_migrations_apply_each_version_exactly_once(postgres_url: str) -> None:
    # Four "processes" (each its own pool) start at once, two per component: the lock makes one of each apply.
    slow = (*LEDGER, Migration(4, "slow", "SELECT pg_sleep(0.3)"))
    keys = (Migration(1, "keys", "CREATE TABLE api_keys (id text PRIMARY KEY)"),
            Migration(2, "keys.seed", "INSERT INTO api_keys VALUES ('k1')"))
    plans = [("ledger", slow), ("ledger", slow), ("keys", keys), ("keys", keys)]
    pools = [open_pool(postgres_url, min_size=1, max_size=2, timeout_s=10) for _ in plans]
    barrier = threading.Barrier(len(plans))
    results: list[list[int] | BaseException] = [[] for _ in plans]

    def run(index: int) -> None:
        component, migrations = plans[index]
        barrier.wait()
        try:
            results[index] = migrate(pools[index], component, migrations)
        except BaseException as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(plans))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(isinstance(result, BaseException) for result in results), results
        assert sorted(map(tuple, results[:2])) == [(), (1, 2, 3, 4)]  # type: ignore[arg-type]
        assert sorted(map(tuple, results[2:])) == [(), (1, 2)]  # type: ignore[arg-type]
        assert _count(pools[0], "SELECT count(*) FROM feltsense_schema_migrations WHERE component = 'ledger'") == 4
        assert _count(pools[0], "SELECT count(*) FROM feltsense_schema_migrations WHERE component = 'keys'") == 2
        assert _count(pools[0], "SELECT count(*) FROM entries") == 1
        assert _count(pools[0], "SELECT count(*) FROM api_keys") == 1
    finally:
        for pool in pools:
            pool.close()


def test_a_failing_migration_leaves_nothing_of_its_run_applied(pool: Pool) -> None:
    broken = (LEDGER[0], Migration(2, "broken", "ALTER TABLE no_such_table ADD COLUMN x int"))
    with pytest.raises(psycopg.errors.UndefinedTable):
        migrate(pool, "ledger", broken)
    assert _applied(pool, "ledger") == []
    assert _count(pool, "SELECT count(*) FROM pg_tables WHERE tablename = 'entries'") == 0
    assert migrate(pool, "ledger", LEDGER) == [1, 2, 3]


@pytest.mark.parametrize("versions", [[1, 3], [2, 3], [1, 1], [2, 1], [0, 1]])
def test_migrations_must_be_numbered_from_one_without_gaps(pool: Pool, versions: list[int]) -> None:
    migrations = [Migration(version, f"m{version}", "SELECT 1") for version in versions]
    with pytest.raises(ValueError, match=r"'ledger' migrations must be numbered 1\.\.2 .*" + str(versions)
                       .replace("[", r"\[").replace("]", r"\]")):
        migrate(pool, "ledger", migrations)
    assert _count(pool, "SELECT count(*) FROM pg_tables WHERE tablename = 'feltsense_schema_migrations'") == 0


def test_a_database_newer_than_the_code_is_refused_with_both_versions(pool: Pool) -> None:
    migrate(pool, "ledger", LEDGER)
    with pytest.raises(ConfigurationError) as caught:
        migrate(pool, "ledger", LEDGER[:2])
    message = str(caught.value)
    assert "'ledger' schema is at version 3" in message
    assert "knows only versions up to 2" in message
    assert "newer feltsense" in message
    assert migrate(pool, "keys", []) == []  # another component is unaffected


def test_lock_keys_are_fixed_and_differ_per_component() -> None:
    assert lock_key("ledger") == lock_key("ledger")
    assert len({lock_key(name) for name in ("", "ledger", "tuning", "keys")}) == 4
    assert all(-(2**63) <= lock_key(name) < 2**63 for name in ("ledger", "keys"))


def test_open_pool_to_a_closed_port_is_unavailable_and_names_the_host_not_the_password() -> None:
    (port,) = free_ports(1)  # nothing listens on it once free_ports returns
    url = f"postgresql://feltsense:hunter2-secret@127.0.0.1:{port}/ledger"
    with pytest.raises(BackendUnavailable) as caught:
        open_pool(url, min_size=1, max_size=2, timeout_s=2)
    message = str(caught.value)
    assert f"127.0.0.1:{port}/ledger" in message
    assert "hunter2" not in message
    assert "hunter2" not in repr(caught.value.__cause__) + repr(caught.value.__context__)
    assert caught.value.backend == "postgres"
    assert describe(url) == f"127.0.0.1:{port}/ledger"


def test_open_pool_refuses_a_url_that_does_not_parse() -> None:
    with pytest.raises(ConfigurationError, match="does not parse"):
        open_pool("postgresql://feltsense:pw@127.0.0.1:notaport/x?sslmode", min_size=1, max_size=1, timeout_s=1)


def test_the_settings_validate_the_url_scheme_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().postgres.url is None
    monkeypatch.setenv("FELTSENSE_POSTGRES__URL", "postgres://feltsense:hunter2@db.internal:5432/feltsense")
    monkeypatch.setenv("FELTSENSE_POSTGRES__POOL_MAX_SIZE", "20")
    settings = Settings().postgres
    assert settings.url is not None
    assert settings.url.get_secret_value() == "postgres://feltsense:hunter2@db.internal:5432/feltsense"
    assert (settings.pool_min_size, settings.pool_max_size, settings.timeout_s) == (1, 20, 10.0)
    assert "hunter2" not in repr(settings)
    assert PostgresSettings(url="postgresql://feltsense@127.0.0.1/feltsense").url is not None

    monkeypatch.setenv("FELTSENSE_POSTGRES__URL", "mysql://feltsense:hunter2@db.internal/feltsense")
    with pytest.raises(ValidationError) as caught:
        Settings()
    message = str(caught.value)
    assert "FELTSENSE_POSTGRES__URL must start with postgresql:// or postgres://" in message
    assert "not mysql://" in message
    assert "hunter2" not in message

    monkeypatch.setenv("FELTSENSE_POSTGRES__URL", "")
    assert Settings().postgres.url is None  # empty counts as unset


@pytest.mark.parametrize("values", [{"pool_min_size": 0}, {"pool_max_size": 0}, {"timeout_s": 0},
                                    {"pool_min_size": 9, "pool_max_size": 8}, {"unknown": 1}])
def test_the_pool_settings_are_bounded(values: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PostgresSettings.model_validate(values)
