"""The PostgreSQL ledger beyond the persistence contract (which runs over it too): several processes on one
database, each with its own pool, share one ledger; concurrent writers behave as SQLite's lock makes them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TypeVar
from urllib.parse import quote

import psycopg
import pytest

from engine.adapters.postgres.connection import open_pool, transaction
from engine.adapters.postgres.ledger import MIGRATIONS, PostgresLedger
from engine.domain.errors import BackendUnavailable, InvalidInput, NotFound
from engine.domain.models import Decision, MemoryState, Resolution, partition_key
from tests.servers.process import free_ports

pytestmark = pytest.mark.postgres

T0 = datetime(2025, 3, 2, 18, 0, tzinfo=UTC)
PARTITION = partition_key("ava", "u1")
Result = TypeVar("Result")


@pytest.fixture
def two(postgres_url: str) -> Iterator[tuple[PostgresLedger, PostgresLedger]]:
    """Two ledgers on one database, each with its own pool: two processes, as far as PostgreSQL can tell."""
    first = PostgresLedger(postgres_url, max_size=4)
    second = PostgresLedger(postgres_url, max_size=4)
    yield first, second
    first.close()
    second.close()


def _at_once(calls: list[Callable[[], Result]]) -> list[Result | Exception]:
    """Run ``calls`` on threads released together; each one's result or the exception it raised, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Result | Exception] = [RuntimeError("did not run")] * len(calls)

    def run(n: int) -> None:
        barrier.wait()
        try:
            results[n] = calls[n]()
        except Exception as exc:  # collected for the test to look at
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_two_processes_share_one_audit_trail_review_queue_and_recall_log(
        two: tuple[PostgresLedger, PostgresLedger]) -> None:
    first, second = two
    first.record("m1", PARTITION, "stored", at=T0, actor="system", names=("Luna",))
    second.record("m1", PARTITION, "archived", at=T0 + timedelta(minutes=1), actor="director:k1")
    first.record("m1", PARTITION, "restored", at=T0 + timedelta(minutes=2), actor="director:k2")
    for ledger in two:
        assert [e.event for e in ledger.history("m1")] == ["stored", "archived", "restored"]

    before = MemoryState(memory_id="m1")
    item = first.propose("demote", partition=PARTITION, before=before,
                         after=before.model_copy(update={"status": "archived"}), score=0.2, reason="faded", at=T0)
    assert [i.item_id for i in second.open_items([PARTITION])] == [item.item_id]
    kept = second.decide(item.item_id, "kept", by="director:k1", at=T0 + timedelta(hours=1))
    assert first.item(item.item_id) == kept and first.open_items() == []
    with pytest.raises(InvalidInput):
        first.decide(item.item_id, "rejected", by="director:k2", at=T0 + timedelta(hours=2))
    assert second.item(item.item_id).decided_by == "director:k1"

    second.record_recall("rc1", PARTITION, T0, '{"memories": ["m1"]}')
    assert first.recall("rc1", PARTITION) == '{"memories": ["m1"]}'
    first.touch("ava", "u1")
    assert second.partitions() == [("ava", "u1")]
    first.tombstone_turns(PARTITION, ["t1"], at=T0)
    assert second.erased_turns(["t1"]) == {"t1"}
    assert second.forget_recalls(PARTITION) == 1
    with pytest.raises(NotFound):
        first.recall("rc1", PARTITION)


def test_of_concurrent_decisions_on_one_item_exactly_one_is_applied(
        two: tuple[PostgresLedger, PostgresLedger]) -> None:
    first, second = two
    state = MemoryState(memory_id="m1")
    for round_ in range(5):
        item = first.propose("demote", partition=PARTITION, before=state, after=state, score=0.1, reason="r", at=T0)
        deciders: list[tuple[PostgresLedger, Decision, str]] = [
            (first, "kept", "director:a"), (second, "rejected", "director:b"),
            (first, "rejected", "director:c"), (second, "kept", "director:d")]
        results = _at_once([partial(ledger.decide, item.item_id, decision, by=by, at=T0)
                            for ledger, decision, by in deciders])
        applied = [r for r in results if not isinstance(r, Exception)]
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(applied) == 1, (round_, results)
        assert all(isinstance(r, InvalidInput) for r in refused), refused
        assert second.item(item.item_id) == applied[0]


def test_of_concurrent_writers_of_one_resolution_exactly_one_records_and_audits_it(
        two: tuple[PostgresLedger, PostgresLedger]) -> None:
    first, second = two
    found = Resolution(memory_id="m1", resolved_by="m2", register="anxiety", at=T0, cue="an apology (rule)",
                       link="shared anchor", recorded_at=T0)
    results = _at_once([lambda: first.record_resolutions(PARTITION, [found]),
                        lambda: second.record_resolutions(PARTITION, [found]),
                        lambda: first.record_resolutions(PARTITION, [found])])
    assert sorted(map(len, results)) == [0, 0, 1], results  # type: ignore[arg-type]
    assert [e.event for e in second.history("m1")] == ["resolved"]

    undone = _at_once([lambda: first.undo_resolutions(PARTITION, ["m1"], by="director:a", at=T0),
                       lambda: second.undo_resolutions(PARTITION, ["m1"], by="director:b", at=T0)])
    assert sorted(type(r).__name__ for r in undone) == ["NotFound", "list"], undone
    assert [e.event for e in first.history("m1")] == ["resolved", "resolution_undone"]


def test_concurrent_retention_sweeps_remove_each_recall_once(two: tuple[PostgresLedger, PostgresLedger]) -> None:
    first, second = two
    for n in range(20):
        first.record_recall(f"rc{n:02}", PARTITION, T0 + timedelta(minutes=n), "x" * 10)
    removed = _at_once([lambda: first.expire_recalls(before=T0 + timedelta(minutes=5), max_bytes=100),
                        lambda: second.expire_recalls(before=T0 + timedelta(minutes=5), max_bytes=100)])
    assert sorted(removed) == [0, 10], removed  # type: ignore[type-var]


def test_the_schema_is_migrated_once_and_prefixed(postgres_url: str) -> None:
    first = PostgresLedger(postgres_url)
    second = PostgresLedger(postgres_url)  # the second process finds it done
    pool = open_pool(postgres_url, min_size=1, max_size=1, timeout_s=5)
    try:
        with transaction(pool) as connection:
            applied = connection.execute(
                "SELECT version FROM feltsense_schema_migrations WHERE component = 'ledger'").fetchall()
            tables = connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename").fetchall()
        assert [v for (v,) in applied] == [m.version for m in MIGRATIONS] == [1, 2]
        assert {t for (t,) in tables} - {"feltsense_schema_migrations"} == {
            "ledger_audit", "ledger_erased_facts", "ledger_erased_turns", "ledger_partitions", "ledger_recalls",
            "ledger_resolutions", "ledger_review", "ledger_trust"}
        on_pool = PostgresLedger.on_pool(pool)
        on_pool.record("m1", PARTITION, "stored", at=T0, actor="system")
        on_pool.close()  # the pool is the caller's: still open
        assert [e.event for e in first.history("m1")] == ["stored"]
        with transaction(pool) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        pool.close()
        first.close()
        second.close()


def test_times_come_back_in_utc_whatever_the_session_time_zone(postgres_url: str) -> None:
    url = f"{postgres_url}?options={quote('-c TimeZone=Asia/Kolkata')}"
    ledger = PostgresLedger(url)
    try:
        at = T0 + timedelta(microseconds=123456)
        ledger.record("m1", PARTITION, "stored", at=at, actor="system")
        (event,) = ledger.history("m1")
        assert event.at == at and event.at.tzinfo is UTC
        state = MemoryState(memory_id="m1")
        item = ledger.propose("promote", partition=PARTITION, before=state, after=state, score=1, reason="r", at=at)
        assert item.proposed_at.tzinfo is UTC and item.model_dump_json() == ledger.item(item.item_id).model_dump_json()
    finally:
        ledger.close()


def test_a_long_recall_body_comes_back_byte_for_byte(postgres_url: str) -> None:
    ledger = PostgresLedger(postgres_url)
    try:
        body = '{"context": "' + "Luna – 🐕 é\\n\t" * 20_000 + '"}'  # far past the size PostgreSQL compresses
        ledger.record_recall("rc1", PARTITION, T0, body)
        assert ledger.recall("rc1", PARTITION) == body
        assert ledger.expire_recalls(before=T0, max_bytes=len(body.encode())) == 0
        assert ledger.expire_recalls(before=T0, max_bytes=len(body.encode()) - 1) == 1
    finally:
        ledger.close()


def test_purge_does_not_wait_for_an_open_transaction_and_the_ledger_survives_a_broken_connection(
        postgres_url: str) -> None:
    ledger = PostgresLedger(postgres_url, max_size=1, timeout_s=2)
    try:
        ledger.record_recall("rc1", PARTITION, T0, "{}")
        with psycopg.connect(postgres_url) as reader:  # a reader holding a transaction open on the table
            reader.execute("SELECT count(*) FROM ledger_recalls").fetchone()
            assert ledger.forget_recalls(PARTITION) == 1
            ledger.purge()
        ledger.purge()
        # A server-side disconnect (a restart, an administrator) breaks the pooled connection: the pool replaces it.
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        ledger.touch("ava", "u1")
        assert ledger.partitions() == [("ava", "u1")]
    finally:
        ledger.close()


def test_an_unreachable_server_is_unavailable() -> None:
    (port,) = free_ports(1)
    with pytest.raises(BackendUnavailable):
        PostgresLedger(f"postgresql://feltsense@127.0.0.1:{port}/feltsense", timeout_s=1)
