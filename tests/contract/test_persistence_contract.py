"""The persistence ports' contract: what the services and the API rely on from the ledger
(``engine.domain.ports.Ledger``), the tuning store (``ProfileStore``) and the key store (``api.auth.KeyStore``).

Each test runs over every adapter of its port through a fixture typed as the port; today the SQLite ones
(the ledger both file-backed and in memory). A new backend joins by adding a param to the fixture."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from api.auth import KeyStore
from api.sqlite_keys import SqliteKeyStore
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import MemoryState, Resolution, partition_key
from engine.domain.ports import Ledger, NoChange, ProfileStore
from engine.domain.tuning import ScoringParams, TuningProfile

T0 = datetime(2025, 3, 2, 18, 0, tzinfo=UTC)
PARTITION = partition_key("ava", "u1")


# -- the ledger ---------------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite-file", "sqlite-memory"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    file_backed = request.param == "sqlite-file"
    opened: Ledger = SqliteLedger(tmp_path / "ledger.sqlite3") if file_backed else SqliteLedger.in_memory()
    yield opened
    opened.close()


def test_an_audit_event_recorded_is_listed_with_proper_names_only(ledger: Ledger) -> None:
    ledger.record("m1", PARTITION, "archived", at=T0, actor="director:k1", status="archived", strength=0.4,
                  names=("Luna", "dog", "Luna"))
    ledger.record("m2", partition_key("ava", "u2"), "pinned", at=T0, actor="system")

    (event,) = ledger.history("m1")
    assert (event.memory_id, event.event, event.status, event.strength, event.actor) == (
        "m1", "archived", "archived", 0.4, "director:k1")
    assert event.names == ("Luna",) and event.at == T0
    assert [e.memory_id for e in ledger.partition_history(PARTITION)] == ["m1"]


def test_erasure_keeps_the_skeleton_and_redacts_names(ledger: Ledger) -> None:
    ledger.record("m1", PARTITION, "stored", at=T0, actor="system", names=("Luna",))
    ledger.record("m1", PARTITION, "erased", at=T0, actor="runtime:k1")
    assert ledger.erased(["m1", "m2"]) == {"m1"} and ledger.erased([]) == set()

    ledger.redact_names(["m1"], strict=True)
    assert [e.names for e in ledger.history("m1")] == [None, None]


def test_a_review_item_decided_changes_status(ledger: Ledger) -> None:
    before = MemoryState(memory_id="m1")
    after = before.model_copy(update={"status": "archived"})
    item = ledger.propose("demote", partition=PARTITION, before=before, after=after, score=0.2, reason="faded",
                          at=T0)
    assert item.decision == "pending" and ledger.is_pending("m1", "demote")
    assert [i.item_id for i in ledger.open_items([PARTITION])] == [item.item_id]

    kept = ledger.decide(item.item_id, "kept", by="director:k1", at=T0 + timedelta(minutes=1))
    assert (kept.decision, kept.decided_by, kept.after) == ("kept", "director:k1", after)
    assert ledger.item(item.item_id).decision == "kept" and not ledger.is_pending("m1", "demote")
    assert ledger.open_items([PARTITION]) == []
    with pytest.raises(InvalidInput):
        ledger.decide(item.item_id, "rejected", by="director:k1", at=T0)
    assert ledger.forget_partition(PARTITION) == 1
    with pytest.raises(NotFound):
        ledger.item(item.item_id)


def test_a_recall_is_kept_by_id_and_partition_until_forgotten(ledger: Ledger) -> None:
    ledger.record_recall("rc1", PARTITION, T0, '{"memories": ["m1"]}')
    assert ledger.recall("rc1", PARTITION) == '{"memories": ["m1"]}'
    with pytest.raises(NotFound):
        ledger.recall("rc1", partition_key("ava", "u2"))
    assert ledger.forget_recalls(PARTITION, ["m1"]) == 1
    with pytest.raises(NotFound):
        ledger.recall("rc1", PARTITION)


def test_a_resolution_is_in_force_until_undone_and_never_recorded_twice(ledger: Ledger) -> None:
    found = Resolution(memory_id="m1", resolved_by="m2", register="anxiety", at=T0, cue="an apology (rule)",
                       link="shared anchor", recorded_at=T0)
    assert ledger.record_resolutions(PARTITION, [found]) == [found]
    assert ledger.record_resolutions(PARTITION, [found]) == []
    assert set(ledger.resolutions_in_force(PARTITION, T0)) == {"m1"}
    assert ledger.resolutions_in_force(PARTITION, T0 - timedelta(seconds=1)) == {}

    (undone,) = ledger.undo_resolutions(PARTITION, ["m1"], by="director:k1", at=T0 + timedelta(hours=1))
    assert undone.undone_by == "director:k1"
    assert ledger.resolutions_in_force(PARTITION, T0 + timedelta(days=1)) == {}
    assert ledger.resolutions(PARTITION, include_undone=False) == []
    with pytest.raises(NotFound):
        ledger.undo_resolutions(PARTITION, ["m1"], by="director:k1", at=T0)
    assert ledger.forget_resolutions(PARTITION) == 1


def test_erased_turns_and_facts_stay_refused(ledger: Ledger) -> None:
    ledger.tombstone_turns(PARTITION, ["t1"], at=T0)
    assert ledger.erased_turns(["t1", "t2"]) == {"t1"}
    ledger.suppress("f1", ["m1"])
    assert ledger.suppressed("f1", ["m0", "m1"]) and not ledger.suppressed("f1", ["m2"])
    ledger.purge()


def test_partitions_touched_are_listed_until_untouched(ledger: Ledger) -> None:
    ledger.touch("bea", "u1")
    ledger.touch("ava", "u1")
    ledger.touch("ava", "u1")
    assert ledger.partitions() == [("ava", "u1"), ("bea", "u1")]
    ledger.untouch("ava", "u1")
    assert ledger.partitions() == [("bea", "u1")]


def test_a_file_backed_ledger_survives_a_restart(tmp_path: Path) -> None:
    first = SqliteLedger(tmp_path / "ledger.sqlite3")
    first.record("m1", PARTITION, "stored", at=T0, actor="system")
    first.close()
    reopened = SqliteLedger(tmp_path / "ledger.sqlite3")
    assert [e.event for e in reopened.history("m1")] == ["stored"]
    reopened.close()


# -- the tuning store ---------------------------------------------------------------------------------------------

ProfileStoreFactory = Callable[[], ProfileStore]
"""Opens the store; called again, it reopens the same profiles."""


@pytest.fixture(params=["sqlite"])
def open_profiles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProfileStoreFactory]:
    opened: list[ProfileStore] = []

    def open_store() -> ProfileStore:
        opened.append(SqliteTuningStore(tmp_path / "tuning.sqlite3"))
        return opened[-1]

    yield open_store
    for store in opened:
        store.close()


def test_a_tuning_save_is_a_new_version_and_rollback_restores(open_profiles: ProfileStoreFactory) -> None:
    store = open_profiles()
    assert store.profile_for("ava").version == 1 and store.history("ava") == []
    changed = TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0))

    saved = store.save(changed, author="director:k1", note="shorter memories")
    assert saved.version == 2 and store.profile_for("ava") == saved
    assert [(v.version, v.author) for v in store.history("ava")] == [(2, "director:k1"), (1, "defaults")]

    defaults = store.history("ava")[-1].profile
    rolled_back = store.save(defaults, author="director:k1", note="roll back to version 1")
    assert rolled_back.version == 3
    assert rolled_back.model_copy(update={"version": 1}) == defaults == store.defaults.model_copy(
        update={"character_id": "ava"})
    assert open_profiles().profile_for("ava") == rolled_back  # and it persists


def test_a_save_that_changes_nothing_or_says_not_why_is_refused(open_profiles: ProfileStoreFactory) -> None:
    store = open_profiles()
    with pytest.raises(NoChange):
        store.save(TuningProfile(character_id="ava"), author="director:k1", note="same values")
    with pytest.raises(InvalidInput):
        store.save(TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0)),
                   author="director:k1", note=" ")
    assert store.history("ava") == []


# -- the key store ------------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite"])
def keys(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStore]:
    store: KeyStore = SqliteKeyStore(tmp_path / "keys.sqlite3")
    yield store
    store.close()


def test_a_revoked_key_stops_authenticating(keys: KeyStore) -> None:
    token = keys.create("acme", "director", label="ci")
    principal = keys.authenticate(token)
    assert principal is not None and (principal.org, principal.role) == ("acme", "director")
    (info,) = keys.list()
    assert (info.key_id, info.org, info.label, info.revoked_at) == (principal.key_id, "acme", "ci", None)

    revoked = keys.revoke(principal.key_id)
    assert revoked.revoked_at is not None and keys.authenticate(token) is None
    assert keys.revoke(principal.key_id).revoked_at == revoked.revoked_at
    with pytest.raises(KeyError):
        keys.revoke("0" * 16)


def test_keys_refuse_bad_tokens_organisations_and_roles(keys: KeyStore) -> None:
    assert keys.authenticate("fs_not-a-token") is None
    token = keys.create("acme", "runtime")
    assert keys.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    with pytest.raises(ValueError, match="organisation"):
        keys.create("bad org", "runtime")
    with pytest.raises(ValueError, match="role"):
        keys.create("acme", "root")


def test_the_development_key_is_issued_once(keys: KeyStore, tmp_path: Path) -> None:
    first = keys.development_key(tmp_path / "dev-key")
    assert first.token is not None and keys.authenticate(first.token) is not None
    assert keys.development_key(tmp_path / "dev-key") == first
    keys.revoke(first.key_id)
    again = keys.development_key(tmp_path / "dev-key")
    assert (again.key_id, again.token) == (first.key_id, None) and again.revoked_at is not None
