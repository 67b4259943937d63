"""What the PostgreSQL tuning store adds to the port's contract (tests/contract/test_persistence_contract.py): several
processes share it, so a save through one is used by the others within ``cache_s``, concurrent saves get distinct
consecutive versions, and ``NoChange`` compares against the database, not a stale cache. Each test takes its own
database (``postgres_url``)."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from engine.adapters.postgres.tuning import PostgresTuningStore
from engine.domain.ports import NoChange
from engine.domain.tuning import ScoringParams, TuningProfile

pytestmark = pytest.mark.postgres

OpenStore = Callable[..., PostgresTuningStore]


@pytest.fixture
def open_store(postgres_url: str) -> Iterator[OpenStore]:
    """Opens another store (another process, as far as the cache knows) on the test's one database."""
    opened: list[PostgresTuningStore] = []

    def open_one(**options: float) -> PostgresTuningStore:
        opened.append(PostgresTuningStore(postgres_url, max_size=2, **options))  # type: ignore[arg-type]
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def _softer(days: float) -> TuningProfile:
    return TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=days))


def test_a_save_through_one_store_is_used_by_another_within_cache_s(open_store: OpenStore) -> None:
    cache_s = 0.5
    a, b = open_store(), open_store(cache_s=cache_s)
    assert b.profile_for("ava").version == 1  # cached now
    saved = a.save(_softer(2.0), author="director:k1", note="shorter memories")
    assert a.profile_for("ava") == saved  # its own save: at once

    started = time.monotonic()
    deadline = started + cache_s + 1.0
    while b.profile_for("ava") != saved:
        assert time.monotonic() < deadline, "the other store did not see the save within cache_s + 1 s"
        time.sleep(0.02)
    assert time.monotonic() - started <= cache_s + 1.0
    assert [v.version for v in b.history("ava")] == [2, 1]  # the history is read from the database


def test_concurrent_saves_from_two_stores_get_distinct_consecutive_versions(open_store: OpenStore) -> None:
    stores = [open_store(cache_s=60.0), open_store(cache_s=60.0)]
    per_store = 6
    start = threading.Barrier(len(stores))
    saved: list[int] = []
    failures: list[BaseException] = []
    guard = threading.Lock()

    def save_from(index: int) -> None:
        start.wait()
        try:
            for step in range(per_store):
                # Values that differ between the stores and from step to step: no save is a NoChange.
                days = 1.0 + index * 0.5 + step
                version = stores[index].save(_softer(days), author=f"director:k{index}", note=f"step {step}").version
                with guard:
                    saved.append(version)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=save_from, args=(index,)) for index in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    total = per_store * len(stores)
    assert sorted(saved) == list(range(2, total + 2))  # none twice, none lost, version 1 the defaults
    history = stores[0].history("ava")
    assert [v.version for v in history] == list(range(total + 1, 0, -1))
    assert [v.author for v in history].count("defaults") == 1


def test_no_change_through_one_store_compares_against_what_another_saved(open_store: OpenStore) -> None:
    a, b = open_store(), open_store(cache_s=60.0)
    assert b.profile_for("ava").version == 1  # b's cache holds the defaults for a minute
    a.save(_softer(2.0), author="director:k1", note="shorter memories")
    with pytest.raises(NoChange) as same:
        b.save(_softer(2.0), author="director:k2", note="the same, from elsewhere")
    assert same.value.version == 2
    # And a real change through b goes above a's version, and is b's in force at once.
    changed = b.save(_softer(3.0), author="director:k2", note="longer again")
    assert changed.version == 3 and b.profile_for("ava") == changed
    assert [v.version for v in a.history("ava")] == [3, 2, 1]


def _body(character_id: str, version: int, **scoring: object) -> str:
    profile = TuningProfile(character_id=character_id, version=version).model_dump(mode="json")
    profile["scoring"].update(scoring)
    return json.dumps(profile)  # float("inf") becomes the token Infinity, which strict JSON refuses


def test_a_bad_stored_row_is_skipped_and_logged_and_the_store_still_opens(
    open_store: OpenStore, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = open_store()
    tail = TuningProfile(character_id="ava").strength.model_copy(update={"tail_exponent": 0.8})
    first.save(TuningProfile(character_id="ava", strength=tail), author="director:k1", note="slower tail")
    with psycopg.connect(postgres_url) as connection:
        connection.cursor().executemany(
            "INSERT INTO tuning_versions VALUES (%s, %s, %s, 'director:k1', 'hostile', now())",
            [("ava", 3, _body("ava", 3, factual_half_life_days=None)),
             ("ava", 4, _body("ava", 4, factual_half_life_days=math.inf)),
             ("cara", 1, "{not json"),
             ("dora", 1, _body("ava", 1))],  # a row whose profile is another character's
        )

    with caplog.at_level(logging.WARNING):
        reopened = open_store()
    skipped = [r for r in caplog.records if r.name.startswith("feltsense.") and r.levelno == logging.WARNING]
    assert len(skipped) == 4, [r.getMessage() for r in caplog.records]
    ava = reopened.profile_for("ava")
    assert (ava.version, ava.strength.tail_exponent) == (2, 0.8)  # the newest valid version
    assert reopened.profile_for("cara") == TuningProfile(character_id="cara")
    assert reopened.profile_for("dora") == TuningProfile(character_id="dora")
    assert [v.version for v in reopened.history("ava")] == [2, 1] and reopened.history("cara") == []
    # The store opened before the damage falls back the same way when it refreshes.
    deadline = time.monotonic() + 2.0
    while first.profile_for("cara") != TuningProfile(character_id="cara") or first.profile_for("ava") != ava:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # A new version goes above the skipped ones: their numbers stay taken.
    saved = reopened.save(TuningProfile(character_id="ava"), author="director:k1", note="defaults again")
    assert saved.version == 5 and [v.version for v in reopened.history("ava")] == [5, 2, 1]
    # A character whose only rows are unreadable keeps them, and its first change goes above them.
    cara = reopened.save(TuningProfile(character_id="cara", scoring=ScoringParams(min_half_life_days=2.0)),
                         author="director:k1", note="cara's first")
    assert cara.version == 2 and [v.version for v in reopened.history("cara")] == [2]
