"""The persistence ports' contract: what the services and the API rely on from the ledger
(``engine.domain.ports.Ledger``), the tuning store (``ProfileStore``) and the key store (``api.auth.KeyStore``).

Each test runs over every adapter of its port through a fixture typed as the port: the SQLite ones (the
ledger both file-backed and in memory) and, for the ledger and the tuning store, PostgreSQL (marked
``postgres``). A new backend joins by adding a param to the fixture."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Protocol

import pytest

from api.auth import DEV_LABEL, DEV_ORG, KeyStore
from engine.adapters.sqlite_keys import SqliteKeyRecords
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.adapters.sqlite_tuning import SqliteTuningStore
from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import MemoryState, Resolution, ReviewKind, partition_key
from engine.domain.ports import Ledger, NoChange, ProfileStore
from engine.domain.tuning import ScoringParams, TuningProfile

T0 = datetime(2025, 3, 2, 18, 0, tzinfo=UTC)
PARTITION = partition_key("ava", "u1")


# -- the ledger ---------------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite-file", "sqlite-memory", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    opened: Ledger
    if request.param == "postgres":
        from engine.adapters.postgres.ledger import PostgresLedger

        opened = PostgresLedger(request.getfixturevalue("postgres_url"), max_size=2)
    elif request.param == "sqlite-file":
        opened = SqliteLedger(tmp_path / "ledger.sqlite3")
    else:
        opened = SqliteLedger.in_memory()
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


def _kept(ledger: Ledger, ids: list[tuple[str, str]]) -> list[str]:
    """Which of (recall id, partition) the log still answers."""
    kept = []
    for recall_id, partition in ids:
        try:
            ledger.recall(recall_id, partition)
        except NotFound:
            continue
        kept.append(recall_id)
    return kept


def test_the_retention_expires_recalls_by_age_then_the_oldest_beyond_the_size_bound(ledger: Ledger) -> None:
    # Bodies of 10 bytes each ("é" is two bytes in UTF-8: the bound counts bytes, not characters).
    body = '{"x":"é"}'
    assert len(body.encode()) == 10
    logged = [("old1", T0 - timedelta(days=40)), ("old2", T0 - timedelta(days=31)),
              ("b", T0 - timedelta(days=3)), ("a", T0 - timedelta(days=3)),  # same time: recall_id breaks the tie
              ("c", T0 - timedelta(days=2)), ("d", T0 - timedelta(days=1)), ("e", T0)]
    for recall_id, at in logged:
        ledger.record_recall(recall_id, PARTITION, at, body)
    everyone = [(r, PARTITION) for r, _ in logged]

    # By age alone: strictly before the bound; one logged exactly at it stays.
    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=None) == 2
    assert _kept(ledger, everyone) == ["b", "a", "c", "d", "e"]
    assert ledger.expire_recalls(before=T0 - timedelta(days=31), max_bytes=None) == 0
    # Then by size: the oldest go first (a before b at the same time), down to exactly the bound.
    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=30) == 2
    assert _kept(ledger, everyone) == ["c", "d", "e"]
    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=30) == 0
    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=29) == 1
    assert _kept(ledger, everyone) == ["d", "e"]
    # Both at once: the age first, then the size of what is left.
    assert ledger.expire_recalls(before=T0 - timedelta(hours=12), max_bytes=5) == 2
    assert _kept(ledger, everyone) == []


def test_the_retention_of_one_namespace_leaves_other_partitions_and_the_size_bound(ledger: Ledger) -> None:
    acme, other = partition_key("acme:ava", "u1"), partition_key("globex:ava", "u1")
    for recall_id, partition, at in [("acme-old", acme, T0 - timedelta(days=40)), ("acme-new", acme, T0),
                                     ("other-old", other, T0 - timedelta(days=40)), ("other-new", other, T0)]:
        ledger.record_recall(recall_id, partition, at, "x" * 100)
    ids = [("acme-old", acme), ("acme-new", acme), ("other-old", other), ("other-new", other)]

    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=1, partition_prefix="acme:") == 1
    assert _kept(ledger, ids) == ["acme-new", "other-old", "other-new"]
    assert ledger.expire_recalls(before=T0 - timedelta(days=30), max_bytes=None, partition_prefix="nobody:") == 0
    assert _kept(ledger, ids) == ["acme-new", "other-old", "other-new"]


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


def test_audit_events_keep_their_order_times_in_utc_and_names_until_a_strict_redaction(ledger: Ledger) -> None:
    other = partition_key("ava", "u2")
    local = datetime(2025, 3, 2, 20, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    ledger.record("m2", PARTITION, "stored", at=T0, actor="system", names=("Marco", "job"))
    ledger.record("m1", PARTITION, "stored", at=T0 - timedelta(days=1), actor="system", names=("Luna",))
    ledger.record("m1", other, "pinned", at=local, actor="director:k1", strength=1.0)
    ledger.record("m1", PARTITION, "erased", at=T0, actor="runtime:k1")

    # In the order recorded (not by time), a memory's events across partitions, a partition's across memories.
    assert [(e.event, e.partition) for e in ledger.history("m1")] == [
        ("stored", PARTITION), ("pinned", other), ("erased", PARTITION)]
    assert [(e.memory_id, e.event) for e in ledger.partition_history(PARTITION)] == [
        ("m2", "stored"), ("m1", "stored"), ("m1", "erased")]
    assert ledger.history("nobody") == [] and ledger.partition_history(partition_key("x", "y")) == []
    pinned = ledger.history("m1")[1]
    assert pinned.at == local and pinned.at.utcoffset() == timedelta(0) and pinned.names == ()
    assert (pinned.status, pinned.strength) == (None, 1.0)
    assert ledger.erased(["m1", "m2", "m1"]) == {"m1"}

    ledger.redact_names(["m1", "m2"], strict=False)  # only proper names were kept: nothing more to drop
    assert [e.names for e in ledger.history("m2")] == [("Marco",)]
    assert [e.names for e in ledger.history("m1")] == [("Luna",), (), ()]
    ledger.redact_names([], strict=True)
    ledger.redact_names(["m2"], strict=True)
    assert [e.names for e in ledger.history("m2")] == [None]
    assert [e.names for e in ledger.history("m1")] == [("Luna",), (), ()]


def test_review_decisions_move_only_forward(ledger: Ledger) -> None:
    before = MemoryState(memory_id="m1")
    after = before.model_copy(update={"status": "archived"})
    kept = ledger.propose("demote", partition=PARTITION, before=before, after=after, score=0.2, reason="faded",
                          at=T0)
    rejected = ledger.propose("demote", partition=PARTITION, before=before, after=after, score=0.3,
                              reason="faded", at=T0)
    assert re.fullmatch(r"r_[0-9a-f]{20}", kept.item_id) and kept.item_id != rejected.item_id
    assert (kept.decided_at, kept.decided_by, kept.proposed_at, kept.before) == (None, None, T0, before)

    with pytest.raises(InvalidInput):
        ledger.decide(kept.item_id, "reverted", by="director:k1", at=T0)  # not kept yet
    ledger.decide(kept.item_id, "kept", by="director:k1", at=T0)
    assert ledger.is_pending("m1", "demote")  # the other item still is
    ledger.decide(rejected.item_id, "rejected", by="director:k2", at=T0)
    assert not ledger.is_pending("m1", "demote")
    reverted = ledger.decide(kept.item_id, "reverted", by="director:k2", at=T0 + timedelta(hours=1))
    assert (reverted.decision, reverted.decided_by, reverted.decided_at) == (
        "reverted", "director:k2", T0 + timedelta(hours=1))
    for item_id, decision in [(kept.item_id, "kept"), (kept.item_id, "reverted"), (rejected.item_id, "kept"),
                              (rejected.item_id, "reverted"), (rejected.item_id, "pending")]:
        with pytest.raises(InvalidInput):
            ledger.decide(item_id, decision, by="director:k1", at=T0)  # type: ignore[arg-type]
    assert ledger.item(rejected.item_id).decision == "rejected"
    with pytest.raises(NotFound):
        ledger.decide("r_unknown", "kept", by="director:k1", at=T0)


def test_a_persons_decisions_count_towards_trust_and_automatic_keeps_never_do(ledger: Ledger) -> None:
    acme = partition_key("acme:ava", "u1")
    state = MemoryState(memory_id="f1", status="provisional")
    after = state.model_copy(update={"status": "active"})
    revoked = MemoryState(memory_id="f0", status="active")
    items = [ledger.propose("promote", partition=acme, before=state, after=after, score=0.6, reason="gate", at=T0,
                            change_kind="promote:diet") for _ in range(4)]
    assert items[0].change_kind == "promote:diet" and items[0].counterpart is None and items[0].applied == ()
    kept = ledger.decide(items[0].item_id, "kept", by="runtime:k1", at=T0, applied=[revoked])
    assert kept.applied == (revoked,)  # what a revert restores besides before
    ledger.decide(items[1].item_id, "kept", by="runtime:k1", at=T0)
    ledger.decide(items[1].item_id, "reverted", by="runtime:k1", at=T0)
    ledger.decide(items[2].item_id, "rejected", by="runtime:k1", at=T0)
    auto = ledger.decide(items[3].item_id, "auto_kept", by="trust", at=T0, applied=[revoked])
    assert (auto.decision, auto.decided_by, auto.applied) == ("auto_kept", "trust", (revoked,))
    with pytest.raises(InvalidInput):
        ledger.decide(items[3].item_id, "reverted", by="runtime:k1", at=T0)  # an automatic keep is undone
    undone = ledger.decide(items[3].item_id, "pending", by="runtime:k1", at=T0)
    assert (undone.decision, undone.decided_by, undone.decided_at, undone.applied) == ("pending", None, None, ())
    record = ledger.trust_record("acme:", "promote:diet")
    assert (record.kept, record.rejected, record.reverted, record.held) == (2, 1, 1, 1)
    assert record.rate == pytest.approx(1 / 3)
    # Per organisation and change kind.
    assert ledger.trust_record("", "promote:diet").kept == 0
    assert ledger.trust_record("acme:", "promote:name").kept == 0
    with pytest.raises(InvalidInput):
        ledger.decide(items[0].item_id, "pending", by="runtime:k1", at=T0)  # only an automatic keep goes back


def test_items_about_erased_memories_go_wherever_they_are_filed(ledger: Ledger) -> None:
    canon = partition_key("ava", "~canon")
    claim = MemoryState(memory_id="f_user")
    ticket = ledger.propose("conflict", partition=canon, before=claim,
                            after=claim.model_copy(update={"overrides_canon": True}), score=1.0, reason="conflict",
                            at=T0, counterpart="f_canon")
    other = ledger.propose("demote", partition=PARTITION, before=MemoryState(memory_id="m9"),
                           after=MemoryState(memory_id="m9"), score=0.1, reason="faded", at=T0)
    assert ledger.item(ticket.item_id).counterpart == "f_canon"
    assert ledger.item(ticket.item_id).change_kind == "conflict"
    assert ledger.forget_items([]) == 0
    assert ledger.forget_items(["f_user"]) == 1
    with pytest.raises(NotFound):
        ledger.item(ticket.item_id)
    again = ledger.propose("conflict", partition=canon, before=claim, after=claim, score=1.0, reason="conflict",
                           at=T0, counterpart="f_canon")
    assert ledger.forget_items(["f_canon"]) == 1  # as the counterpart too
    assert ledger.item(other.item_id).item_id == other.item_id and again.item_id != ticket.item_id


def test_open_items_filter_by_partition_and_decision_in_proposal_order(ledger: Ledger) -> None:
    other = partition_key("bea", "u1")
    items = []
    for n, partition in enumerate([PARTITION, other, PARTITION, other, PARTITION]):
        state = MemoryState(memory_id=f"m{n}")
        kind: ReviewKind = "demote" if n % 2 else "promote"
        items.append(ledger.propose(kind, partition=partition, before=state, after=state, score=n / 10,
                                    reason="r", at=T0 - timedelta(minutes=n)))  # later proposals, earlier times
    ids = [i.item_id for i in items]
    ledger.decide(ids[2], "kept", by="director:k1", at=T0)

    assert [i.item_id for i in ledger.open_items()] == [ids[0], ids[1], ids[3], ids[4]]
    assert [i.item_id for i in ledger.open_items([PARTITION])] == [ids[0], ids[4]]
    assert [i.item_id for i in ledger.open_items([PARTITION, other], limit=2)] == [ids[0], ids[1]]
    assert ledger.open_items([]) == [] and ledger.open_items([partition_key("x", "y")]) == []
    assert [i.item_id for i in ledger.open_items(decision="kept")] == [ids[2]]
    assert [i.item_id for i in ledger.open_items(decision=None)] == ids
    assert [i.item_id for i in ledger.open_items([other], decision=None, limit=1)] == [ids[1]]
    assert ledger.open_items(decision="rejected") == [] and ledger.open_items(limit=0) == []
    assert ledger.is_pending("m1", "demote") and not ledger.is_pending("m1", "promote")
    assert not ledger.is_pending("m2", "promote")  # kept

    assert ledger.forget_partition(other) == 2 and ledger.forget_partition(other) == 0
    assert [i.item_id for i in ledger.open_items(decision=None)] == [ids[0], ids[2], ids[4]]


def test_a_recall_body_comes_back_exactly_and_a_second_with_its_id_replaces_it(ledger: Ledger) -> None:
    other = partition_key("ava", "u2")
    body = '{ "z": 1,  "a": "Luna – 🐕\\u00e9 é",\n"memories": ["m1", "m2"] }  '
    ledger.record_recall("rc1", PARTITION, T0, body)
    assert ledger.recall("rc1", PARTITION) == body
    ledger.record_recall("rc1", other, T0, '{"memories": ["m3"]}')  # same id: replaced, and moved
    assert ledger.recall("rc1", other) == '{"memories": ["m3"]}'
    with pytest.raises(NotFound):
        ledger.recall("rc1", PARTITION)

    ledger.record_recall("rc2", PARTITION, T0, '{"memories": ["m1", "m2"]}')
    ledger.record_recall("rc3", PARTITION, T0, '{"memories": ["m2"]}')
    ledger.record_recall("rc4", PARTITION, T0, '{"memories": ["m4"]}')
    assert ledger.forget_recalls(PARTITION, []) == 0
    assert ledger.forget_recalls(PARTITION, ["m1", "m2", "m3"]) == 2  # each recall counted once; m3 is elsewhere
    assert ledger.recall("rc1", other) and ledger.recall("rc4", PARTITION)
    assert ledger.forget_recalls(PARTITION) == 1 and ledger.forget_recalls(PARTITION) == 0
    assert ledger.recall("rc1", other) == '{"memories": ["m3"]}'


def _resolution(memory_id: str, resolved_by: str, at: datetime) -> Resolution:
    return Resolution(memory_id=memory_id, resolved_by=resolved_by, register="anger", at=at, cue="an apology (rule)",
                      link="similar meaning (0.71)", recorded_at=T0 + timedelta(days=1))


def test_resolutions_are_listed_oldest_first_and_the_earliest_is_in_force(ledger: Ledger) -> None:
    other = partition_key("ava", "u2")
    late, early, tie = _resolution("m1", "m5", T0), _resolution("m1", "m3", T0 - timedelta(hours=1)), \
        _resolution("M2", "m4", T0 - timedelta(hours=1))
    elsewhere = _resolution("m9", "m8", T0)
    # A pair twice in one call is recorded once.
    assert ledger.record_resolutions(PARTITION, [late, early, late, tie]) == [late, early, tie]
    assert ledger.record_resolutions(other, [elsewhere]) == [elsewhere]
    assert ledger.record_resolutions(PARTITION, []) == []

    # Oldest first, then by memory id, by code point ("M2" before "m1").
    assert ledger.resolutions(PARTITION) == [tie, early, late]
    assert ledger.resolutions_in_force(PARTITION, T0) == {"m1": early, "M2": tie}
    assert ledger.resolutions_in_force(PARTITION, T0 - timedelta(hours=2)) == {}
    # Each new resolution is audited on the memory resolved, at the time it was recorded, by the system.
    (resolved,) = ledger.history("M2")
    assert (resolved.event, resolved.partition, resolved.at, resolved.actor, resolved.names, resolved.status) == (
        "resolved", PARTITION, T0 + timedelta(days=1), "system", (), None)
    assert [e.event for e in ledger.history("m1")] == ["resolved", "resolved"]

    # Undo: every resolution in force of the memories named (an unknown one is passed over), each audited once.
    undone = ledger.undo_resolutions(PARTITION, ["m1", "nobody", "m1"], by="director:k1", at=T0 + timedelta(days=2))
    assert [(r.memory_id, r.resolved_by) for r in undone] == [("m1", "m3"), ("m1", "m5")]
    assert {(r.undone_at, r.undone_by) for r in undone} == {(T0 + timedelta(days=2), "director:k1")}
    assert ledger.resolutions(PARTITION) == [tie, *undone]
    assert ledger.resolutions(PARTITION, include_undone=False) == [tie]
    assert ledger.resolutions_in_force(PARTITION, T0 + timedelta(days=3)) == {"M2": tie}
    last = ledger.history("m1")[-1]
    assert (last.event, last.at, last.actor, last.names) == (
        "resolution_undone", T0 + timedelta(days=2), "director:k1", ())
    # Recording an undone pair again leaves it undone (a retried session does not resolve it again).
    assert ledger.record_resolutions(PARTITION, [early]) == []
    assert ledger.resolutions_in_force(PARTITION, T0 + timedelta(days=3)) == {"M2": tie}
    with pytest.raises(NotFound):
        ledger.undo_resolutions(PARTITION, ["m9"], by="director:k1", at=T0)  # in force, but in another partition
    with pytest.raises(NotFound):
        ledger.undo_resolutions(PARTITION, [], by="director:k1", at=T0)


def test_forgetting_resolutions_takes_those_naming_a_memory_on_either_side(ledger: Ledger) -> None:
    other = partition_key("ava", "u2")
    ledger.record_resolutions(PARTITION, [_resolution("m1", "m2", T0), _resolution("m3", "m1", T0),
                                          _resolution("m4", "m5", T0)])
    ledger.record_resolutions(other, [_resolution("m6", "m1", T0)])
    assert ledger.forget_resolutions(PARTITION, []) == 0
    assert ledger.forget_resolutions(PARTITION, ["m1"]) == 2  # resolved and resolving; not in the other partition
    assert [r.memory_id for r in ledger.resolutions(PARTITION)] == ["m4"]
    assert [r.memory_id for r in ledger.resolutions(other)] == ["m6"]
    assert ledger.forget_resolutions(PARTITION) == 1 and ledger.forget_resolutions(PARTITION) == 0
    assert ledger.resolutions(PARTITION) == [] and len(ledger.resolutions(other)) == 1


def test_tombstones_and_suppressions_are_idempotent_and_global(ledger: Ledger) -> None:
    ledger.tombstone_turns(PARTITION, ["t1", "t2"], at=T0)
    ledger.tombstone_turns(partition_key("ava", "u2"), ["t2", "t3"], at=T0)  # already one: no error
    ledger.tombstone_turns(PARTITION, [], at=T0)
    assert ledger.erased_turns(["t1", "t2", "t3", "t4", "t1"]) == {"t1", "t2", "t3"}
    assert ledger.erased_turns([]) == set()

    ledger.suppress("f1", ["m1", "m2"])
    ledger.suppress("f1", ["m2", "m3"])
    ledger.suppress("f2", [])
    assert ledger.suppressed("f1", ["m3"]) and ledger.suppressed("f1", ["m0", "m2"])
    assert not ledger.suppressed("f1", []) and not ledger.suppressed("f2", ["m1"])
    assert not ledger.suppressed("f3", ["m1"])
    ledger.purge()
    ledger.purge()


def test_partitions_are_sorted_by_code_point_and_untouching_an_unknown_one_is_harmless(ledger: Ledger) -> None:
    for character_id, user_id in [("ava", "u2"), ("ava", "U1"), ("Zed", "u1"), ("ava", "u10"), ("éa", "u1"),
                                  ("ava", "u2")]:
        ledger.touch(character_id, user_id)
    assert ledger.partitions() == [("Zed", "u1"), ("ava", "U1"), ("ava", "u10"), ("ava", "u2"), ("éa", "u1")]
    ledger.untouch("nobody", "u1")
    ledger.untouch("ava", "u10")
    assert ledger.partitions() == [("Zed", "u1"), ("ava", "U1"), ("ava", "u2"), ("éa", "u1")]


def test_a_restored_partition_reads_back_exactly_with_no_event_of_its_own_and_twice_is_once(ledger: Ledger) -> None:
    # Made on a first ledger as the services would make them, then restored into the one under test.
    source = SqliteLedger.in_memory()
    source.record("m1", PARTITION, "archived", at=T0, actor="director:k1", status="archived", strength=0.4,
                  names=("Luna",))
    source.record("m2", PARTITION, "erased", at=T0 + timedelta(minutes=1), actor="runtime:k2")
    source.redact_names(["m2"], strict=True)
    source.record_resolutions(PARTITION, [Resolution(memory_id="m3", resolved_by="m4", register="anxiety", at=T0,
                                                     cue="an apology (rule)", link="shared anchor",
                                                     recorded_at=T0 + timedelta(hours=1))])
    source.undo_resolutions(PARTITION, ["m3"], by="director:k1", at=T0 + timedelta(hours=2))
    item = source.propose("promote", partition=PARTITION, before=MemoryState(memory_id="m5", status="provisional"),
                          after=MemoryState(memory_id="m5"), score=0.7, reason="stated twice", at=T0)
    source.decide(item.item_id, "kept", by="director:k1", at=T0 + timedelta(days=1))
    audit, resolutions = source.partition_history(PARTITION), source.resolutions(PARTITION)
    items = source.open_items([PARTITION], decision=None)
    source.close()

    for expected in ({"audit": len(audit), "resolutions": 1, "review_items": 1},
                     {"audit": 0, "resolutions": 0, "review_items": 0}):
        added = ledger.restore_partition(PARTITION, audit=audit, resolutions=resolutions, review_items=items)
        assert added == expected
    assert ledger.partition_history(PARTITION) == audit
    assert ledger.resolutions(PARTITION) == resolutions
    assert ledger.open_items([PARTITION], decision=None) == items
    assert ledger.resolutions_in_force(PARTITION, T0 + timedelta(days=3)) == {}  # undone stays undone


def test_a_file_backed_ledger_survives_a_restart(tmp_path: Path) -> None:
    first = SqliteLedger(tmp_path / "ledger.sqlite3")
    first.record("m1", PARTITION, "stored", at=T0, actor="system")
    first.close()
    reopened = SqliteLedger(tmp_path / "ledger.sqlite3")
    assert [e.event for e in reopened.history("m1")] == ["stored"]
    reopened.close()


# -- the tuning store ---------------------------------------------------------------------------------------------

class ProfileStoreFactory(Protocol):
    """Opens the store; called again, it reopens the same profiles (``default``: the defaults it is given)."""

    def __call__(self, *, default: TuningProfile | None = None) -> ProfileStore: ...


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def open_profiles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProfileStoreFactory]:
    opened: list[ProfileStore] = []
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""

    def open_store(*, default: TuningProfile | None = None) -> ProfileStore:
        if request.param == "postgres":
            from engine.adapters.postgres.tuning import PostgresTuningStore

            opened.append(PostgresTuningStore(url, default=default, max_size=2))
        else:
            opened.append(SqliteTuningStore(tmp_path / "tuning.sqlite3", default=default))
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


def test_a_blank_note_names_the_field_and_no_change_names_the_version_in_force(
    open_profiles: ProfileStoreFactory,
) -> None:
    store = open_profiles()
    softer = TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0))
    with pytest.raises(InvalidInput) as blank:
        store.save(softer, author="director:k1", note=" \n")
    assert blank.value.field == "note"
    with pytest.raises(NoChange, match="equal version 1") as same:
        store.save(TuningProfile(character_id="ava"), author="director:k1", note="nothing")
    assert same.value.version == 1
    store.save(softer, author="director:k1", note="a softer floor")
    with pytest.raises(NoChange) as again:
        store.save(softer.model_copy(update={"version": 7}), author="director:k1", note="the same again")
    assert again.value.version == 2 and [v.version for v in store.history("ava")] == [2, 1]


def test_a_saved_version_keeps_who_why_and_when_and_ignores_the_number_it_came_with(
    open_profiles: ProfileStoreFactory,
) -> None:
    store = open_profiles()
    before = datetime.now(UTC) - timedelta(seconds=5)
    changed = TuningProfile(character_id="ava", version=42, scoring=ScoringParams(min_half_life_days=2.0))
    saved = store.save(changed, author="director:k1", note="shorter memories")
    assert saved == changed.model_copy(update={"version": 2})
    newest, first = store.history("ava")
    assert (newest.version, newest.profile, newest.author, newest.note) == (2, saved, "director:k1",
                                                                            "shorter memories")
    assert (first.version, first.profile, first.author, first.note) == (
        1, TuningProfile(character_id="ava"), "defaults", "")
    for version in (newest, first):
        assert version.saved_at.tzinfo is not None and before <= version.saved_at <= datetime.now(UTC)
    reopened = open_profiles()
    assert reopened.history("ava") == store.history("ava") and reopened.profile_for("ava") == saved


def test_set_makes_a_version_only_when_the_values_change(open_profiles: ProfileStoreFactory) -> None:
    store = open_profiles()
    store.set(TuningProfile(character_id="ava"))  # the defaults in force already: no version
    assert store.history("ava") == []
    softer = TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0))
    store.set(softer)
    store.set(softer)
    newest = store.history("ava")[0]
    assert (newest.version, newest.author, newest.note) == (2, "engine", "set by the engine")
    assert [v.version for v in store.history("ava")] == [2, 1] and store.profile_for("ava").version == 2


def test_characters_are_versioned_apart(open_profiles: ProfileStoreFactory) -> None:
    store = open_profiles()
    store.save(TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=2.0)),
               author="director:k1", note="ava's first")
    store.save(TuningProfile(character_id="ava", scoring=ScoringParams(min_half_life_days=3.0)),
               author="director:k1", note="ava's second")
    assert store.profile_for("bea") == TuningProfile(character_id="bea") and store.history("bea") == []
    bea = store.save(TuningProfile(character_id="bea", scoring=ScoringParams(min_half_life_days=2.0)),
                     author="director:k2", note="bea's first")
    assert bea.version == 2 and store.profile_for("ava").version == 3
    assert [v.version for v in store.history("bea")] == [2, 1]
    assert [v.version for v in open_profiles().history("ava")] == [3, 2, 1]


def test_the_order_of_a_register_set_is_no_change(open_profiles: ProfileStoreFactory) -> None:
    store = open_profiles()
    tone = TuningProfile(character_id="ava").tone
    reordered = tone.model_copy(update={"standing_registers": tuple(reversed(tone.standing_registers))})
    assert reordered.standing_registers != tone.standing_registers
    with pytest.raises(NoChange):
        store.save(TuningProfile(character_id="ava", tone=reordered), author="director:k1", note="reordered")


def test_the_defaults_given_are_every_untuned_characters_version_1(open_profiles: ProfileStoreFactory) -> None:
    default = TuningProfile(scoring=ScoringParams(min_half_life_days=4.0))
    store = open_profiles(default=default)
    assert store.defaults == default
    assert store.profile_for("ava") == default.model_copy(update={"character_id": "ava"})
    with pytest.raises(NoChange):
        store.save(default.model_copy(update={"character_id": "ava"}), author="director:k1", note="the same")
    saved = store.save(TuningProfile(character_id="ava"), author="director:k1", note="the stock defaults")
    assert saved.version == 2
    assert store.history("ava")[-1].profile == default.model_copy(update={"character_id": "ava"})


# -- the key store ------------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keys(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStore]:
    if request.param == "postgres":
        from engine.adapters.postgres.keys import PostgresKeyRecords

        store = KeyStore(PostgresKeyRecords(request.getfixturevalue("postgres_url"), max_size=2))
    else:
        store = KeyStore(SqliteKeyRecords(tmp_path / "keys.sqlite3"))
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


def test_keys_list_oldest_first_with_utc_iso_times(keys: KeyStore) -> None:
    tokens = [keys.create("acme", role, label=f"k{n}") for n, role in enumerate(("runtime", "admin", "evaluator"))]
    listed = keys.list()
    assert [key.label for key in listed] == ["k0", "k1", "k2"]
    assert [key.key_id for key in listed] == [token.split("_")[1] for token in tokens]
    for key in listed:  # what `feltsense keys list` prints: ISO 8601 in UTC, as the SQLite store always wrote
        assert key.created_at.endswith("+00:00") and datetime.fromisoformat(key.created_at).tzinfo is not None
    revoked = keys.revoke(listed[1].key_id)
    assert revoked.revoked_at is not None and revoked.revoked_at.endswith("+00:00")
    assert [key.revoked_at for key in keys.list()] == [None, revoked.revoked_at, None]
    assert keys.authenticate(tokens[0]) is not None and keys.authenticate(tokens[1]) is None


def test_a_failed_development_key_file_issues_no_key(keys: KeyStore, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the key's directory should be")
    with pytest.raises(OSError):
        keys.development_key(blocked / "dev-key")
    assert keys.list() == []
    issued = keys.development_key(tmp_path / "dev-key")
    assert issued.token is not None and [key.key_id for key in keys.list()] == [issued.key_id]


def test_a_development_key_known_only_by_its_label_is_adopted(keys: KeyStore, tmp_path: Path) -> None:
    """Stores from before issued keys were recorded: the key labelled as the development key is the one."""
    token = keys.create(DEV_ORG, "runtime", label=DEV_LABEL)
    (tmp_path / "dev-key").write_text(token + "\n")
    adopted = keys.development_key(tmp_path / "dev-key")
    assert adopted.token == token and len(keys.list()) == 1
    keys.revoke(adopted.key_id)
    again = keys.development_key(tmp_path / "dev-key")
    assert (again.key_id, again.token) == (adopted.key_id, None) and len(keys.list()) == 1


def test_a_ledger_made_before_change_kinds_opens_and_reads_its_items(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE review (item_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
                "memory_id TEXT NOT NULL, partition TEXT NOT NULL, proposed_at TEXT NOT NULL, score REAL NOT NULL, "
                "reason TEXT NOT NULL, before TEXT NOT NULL, after TEXT NOT NULL, decision TEXT NOT NULL DEFAULT "
                "'pending', decided_at TEXT, decided_by TEXT)")
    state = MemoryState(memory_id="f1").model_dump_json()
    old.execute("INSERT INTO review (item_id, seq, kind, memory_id, partition, proposed_at, score, reason, before, "
                "after) VALUES ('r_old', 1, 'promote', 'f1', ?, ?, 0.5, 'stated 2 times', ?, ?)",
                (PARTITION, T0.isoformat(), state, state))
    old.commit()
    old.close()
    ledger = SqliteLedger(path)
    item = ledger.item("r_old")
    assert (item.change_kind, item.counterpart, item.applied) == ("promote", None, ())
    assert ledger.decide("r_old", "kept", by="director:k1", at=T0).decision == "kept"
    ledger.close()
