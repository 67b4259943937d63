"""The lifecycle part of the store contract: states decide what search sees, facts are written with what they
replace, and erasure leaves no content behind. Every backend passes these."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest

from engine.domain.errors import NotFound
from engine.domain.models import FactInfo, Memory, MemoryState, Partition, Trace, TraceStatus, Turn
from engine.domain.ports import MemoryStore
from tests.contract.conftest import EMBEDDER, StoreFactory
from tests.contract.test_store_contract import LATER, PARTITION, T0, _add, _memory, _pool, _search


def _fact(fact_id: str, sentence: str, *, subject: str = "user", relation: str = "lives_in", value: str = "x",
          partition: Partition = PARTITION, provenance: tuple[str, ...] = ()) -> Memory:
    return Memory(memory_id=fact_id, turn_id="", session_id="s1", character_id=partition.character_id,
                  user_id=partition.user_id, text=sentence, created_at=T0 + timedelta(hours=1), kind="fact",
                  fact=FactInfo(subject=subject, relation=relation, value=value, source="user_stated",
                                content_hash=hashlib.sha256(sentence.lower().encode()).hexdigest(),
                                provenance=provenance))


def _write(store: MemoryStore, fact: Memory, *, status: str = "active", replaced: tuple[MemoryState, ...] = ()) -> None:
    store.write_fact(fact, EMBEDDER.embed([fact.text])[0],
                     MemoryState(memory_id=fact.memory_id, status=status), replaced)  # type: ignore[arg-type]


def test_status_decides_what_search_sees(store: MemoryStore) -> None:
    memories = [_memory(1, "we walked by the river"), _memory(2, "the river was cold today")]
    _add(store, memories)
    first = memories[0].memory_id
    assert set(_search(store, "river")) == {first, memories[1].memory_id}

    for status in ("provisional", "revoked"):
        store.put_states([MemoryState(memory_id=first, status=status)])  # type: ignore[arg-type]
        assert _search(store, "river") == [memories[1].memory_id]
        assert [c.memory_id for c in store.substring_search(PARTITION, query_text="river", limit=5,
                                                             exclude_session=None, created_before=LATER)] \
            == [memories[1].memory_id]

    archived = MemoryState(memory_id=first, status="archived", prior_status="active", pinned=True)
    store.put_states([archived])
    assert _search(store, "river") == [memories[1].memory_id]
    assert first in _search(store, "river", include_archived=True)
    assert store.get_states([first, memories[1].memory_id]) == {first: archived}

    store.put_states([archived.model_copy(update={"status": "active", "prior_status": None})])
    assert set(_search(store, "river")) == {first, memories[1].memory_id}


def test_a_state_needs_its_memory(store: MemoryStore) -> None:
    with pytest.raises(NotFound):
        store.put_states([MemoryState(memory_id="m_missing")])


def test_states_and_facts_survive_a_restart(factory: StoreFactory, tmp_path: Path) -> None:
    store = factory(tmp_path)
    _add(store, [_memory(1, "I live in Leeds")])
    fact = _fact("f_leeds", "The user lives in Leeds.", value="Leeds", provenance=(_memory(1, "").memory_id,))
    _write(store, fact, status="provisional")
    store.close()

    reopened = factory(tmp_path)
    try:
        assert reopened.list_facts(PARTITION) == [fact]
        assert reopened.get_states(["f_leeds"])["f_leeds"].status == "provisional"
        assert "f_leeds" not in _search(reopened, "Leeds")
    finally:
        reopened.close()


def test_a_fact_is_written_with_what_it_replaces(store: MemoryStore) -> None:
    source = _memory(1, "I live in Leeds, the rain is relentless")
    _add(store, [source])
    leeds = _fact("f_leeds", "The user lives in Leeds.", value="Leeds", provenance=(source.memory_id,))
    _write(store, leeds)
    assert "f_leeds" in _search(store, "lives in Leeds")

    lisbon = _fact("f_lisbon", "The user lives in Lisbon.", value="Lisbon")
    _write(store, lisbon, replaced=(
        MemoryState(memory_id="f_leeds", status="revoked", superseded_by="f_lisbon"),
        MemoryState(memory_id=source.memory_id, stale=True, superseded_by="f_lisbon"),
    ))
    # The revoked fact is gone from search; the stale source stays findable (the engine ranks it down).
    assert _pool(store, "the user lives in Leeds Lisbon") == [source.memory_id, "f_lisbon"]
    states = store.get_states(["f_leeds", "f_lisbon", source.memory_id])
    assert states["f_leeds"].status == "revoked" and states["f_leeds"].superseded_by == "f_lisbon"
    assert states[source.memory_id].stale and states[source.memory_id].status == "active"
    assert [f.memory_id for f in store.list_facts(PARTITION)] == ["f_leeds", "f_lisbon"]
    assert store.session_memories("s1") == [source]  # a session's turns, not the facts distilled from it
    assert store.list_facts(Partition(character_id="ava", user_id="u2")) == []


def test_archived_grief_still_feeds_tone_rules(store: MemoryStore) -> None:
    grief = _memory(1, "My dog Luna died last week.")
    _add(store, [grief])
    store.put_traces([Trace(memory_id=grief.memory_id, status=TraceStatus.COMPLETE, kind="emotional",
                            register="grief", valence=-0.9, intensity=0.9, written_at=T0)])
    store.put_states([MemoryState(memory_id=grief.memory_id, status="archived", prior_status="active")])
    found = store.tone_candidates(PARTITION, min_intensity=0.6, max_valence=-0.25)
    assert found.memory_ids == [grief.memory_id]


def test_erasure_leaves_no_content(store: MemoryStore) -> None:
    secret = "my secret is the blue door"
    turns = [Turn(turn_id="t1", session_id="s1", character_id="ava", user_id="u1", role="user", text=secret,
                  timestamp=T0),
             Turn(turn_id="t2", session_id="s9", character_id="ava", user_id="u2", role="user", text=secret,
                  timestamp=T0)]
    store.add_turns(turns)
    mine, theirs = _memory(1, secret), _memory(2, secret, user="u2", session="s9")
    _add(store, [mine, theirs])
    _write(store, _fact("f_door", "The user's secret is the blue door.", subject="secret", relation="is",
                        provenance=(mine.memory_id,)))

    ids = [m.memory_id for m in store.list_memories(PARTITION, offset=0, limit=100)]
    store.delete_memories(ids)
    assert store.delete_turns(PARTITION) == ["t1"]
    store.purge()

    assert store.list_memories(PARTITION, offset=0, limit=100) == []
    assert store.list_facts(PARTITION) == [] and store.get_states(ids) == {}
    assert _search(store, "blue door") == []
    assert store.substring_search(PARTITION, query_text="blue door", limit=5, exclude_session=None,
                                  created_before=LATER) == []
    assert store.get_turns("s1") == [] and store.get_memories(ids) == []
    # Another user's copy of the same words is theirs, and stays.
    assert store.get_turns("s9") == [turns[1]]
    assert _search(store, "blue door", partition=Partition(character_id="ava", user_id="u2")) == [theirs.memory_id]


def test_turns_are_found_and_erased_by_id_only_in_their_partition(store: MemoryStore) -> None:
    mine = [Turn(turn_id=f"t{i}", session_id="s1", character_id="ava", user_id="u1", role="user",
                 text=f"turn {i}", timestamp=T0 + timedelta(minutes=i)) for i in range(3)]
    theirs = Turn(turn_id="x1", session_id="s9", character_id="ava", user_id="u2", role="user", text="theirs",
                  timestamp=T0)
    store.add_turns([*mine, theirs])
    assert store.find_turns(["t1", "x1", "nope"]) == {"t1": mine[1], "x1": theirs}
    assert store.find_turns([]) == {}

    # By id, and only the partition's own: another user's id in the list is left alone.
    assert store.delete_turns(PARTITION, ["t1", "x1", "nope"]) == ["t1"]
    assert store.delete_turns(PARTITION, []) == []
    assert store.get_turns("s1") == [mine[0], mine[2]]
    assert store.find_turns(["t1", "x1"]) == {"x1": theirs}
    store.purge()
