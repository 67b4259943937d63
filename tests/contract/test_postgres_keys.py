"""API keys shared by several API processes through one PostgreSQL database: two key stores, each with its own
pool (as two processes on two hosts would have), over one fresh database (``postgres_url``)."""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.auth import DevelopmentKey, KeyStore
from engine import build_key_records
from engine.adapters.postgres.keys import PostgresKeyRecords
from engine.settings import PostgresSettings, Settings

pytestmark = pytest.mark.postgres


@pytest.fixture
def two(postgres_url: str) -> Iterator[tuple[KeyStore, KeyStore]]:
    a = KeyStore(PostgresKeyRecords(postgres_url, max_size=2))
    b = KeyStore(PostgresKeyRecords(postgres_url, max_size=2))
    yield a, b
    a.close()
    b.close()


def test_a_key_made_on_one_process_works_on_the_other_and_a_revoke_holds_on_both_at_once(
    two: tuple[KeyStore, KeyStore],
) -> None:
    a, b = two
    token = a.create("acme", "runtime", label="ci")
    on_b = b.authenticate(token)
    assert on_b is not None and (on_b.org, on_b.role) == ("acme", "runtime")
    assert a.list() == b.list()

    revoked = b.revoke(on_b.key_id)
    assert a.authenticate(token) is None and b.authenticate(token) is None  # no cache on A to wait out
    assert a.revoke(on_b.key_id).revoked_at == revoked.revoked_at  # the first revocation time is kept
    assert [key.revoked_at for key in a.list()] == [revoked.revoked_at]


def test_two_processes_starting_at_once_issue_one_development_key(postgres_url: str, tmp_path: Path) -> None:
    stores = [KeyStore(PostgresKeyRecords(postgres_url, max_size=2)) for _ in range(2)]
    paths = [tmp_path / f"host{n}" / "dev-key" for n in range(2)]
    start = threading.Barrier(len(stores))
    found: list[DevelopmentKey | None] = [None] * len(stores)
    errors: list[BaseException] = []

    def issue(n: int) -> None:
        try:
            start.wait()
            found[n] = stores[n].development_key(paths[n])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=issue, args=(n,)) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    try:
        assert errors == []
        first, second = found
        assert first is not None and second is not None
        assert first.key_id == second.key_id
        # One of them issued it and wrote its file; the other found it issued, with no file of its own to show.
        assert sorted([first.token is None, second.token is None]) == [False, True]
        assert [path.is_file() for path in paths].count(True) == 1
        written = next(path for path in paths if path.is_file())
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
        assert [key.key_id for key in stores[0].list()] == [first.key_id]
        token = first.token or second.token
        assert token is not None and all(store.authenticate(token) is not None for store in stores)
    finally:
        for store in stores:
            store.close()


def test_the_facade_keeps_keys_in_postgres_when_a_url_is_set(postgres_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, postgres=PostgresSettings(url=postgres_url, pool_max_size=2))
    records = build_key_records(settings)
    try:
        assert isinstance(records, PostgresKeyRecords)
        token = KeyStore(records).create("acme", "admin")
    finally:
        records.close()
    assert not (tmp_path / "keys.sqlite3").exists()
    other = KeyStore(build_key_records(settings))
    try:
        assert other.authenticate(token) is not None
    finally:
        other.close()
