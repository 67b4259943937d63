"""The store contract: every MemoryStore backend passes these (the Weaviate adapter joins the parametrization)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.errors import ConfigurationError
from engine.ingest import memory_id_for
from engine.models import Memory, Partition, Trace, TraceStatus, Turn
from engine.ports import MemoryStore
from engine.tuning import RetrievalParams

EMBEDDER = HashingEmbedder()
T0 = datetime(2025, 3, 1, 12, tzinfo=UTC)
PARTITION = Partition(character_id="ava", user_id="u1")
LATER = T0 + timedelta(days=30)

StoreFactory = Callable[[Path], MemoryStore]


def embedded(path: Path) -> MemoryStore:
    return EmbeddedStore(path, embedding_model=EMBEDDER.model_id, dimension=EMBEDDER.dimension)


@pytest.fixture(params=[embedded], ids=["embedded"])
def factory(request: pytest.FixtureRequest) -> StoreFactory:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def store(factory: StoreFactory, tmp_path: Path) -> Iterator[MemoryStore]:
    s = factory(tmp_path)
    yield s
    s.close()


def _memory(i: int, text: str, *, user: str = "u1", session: str = "s1") -> Memory:
    return Memory(memory_id=memory_id_for(f"{user}-t{i}"), turn_id=f"{user}-t{i}", session_id=session,
                  character_id="ava", user_id=user, text=text, created_at=T0 + timedelta(minutes=i))


def _add(store: MemoryStore, memories: list[Memory]) -> None:
    store.add_memories(memories, EMBEDDER.embed([m.text for m in memories]))


def _search(store: MemoryStore, text: str, *, partition: Partition = PARTITION, exclude: str | None = None,
            vector: bool = True) -> list[str]:
    candidates, _ = store.search(
        partition, query_vector=EMBEDDER.embed([text])[0] if vector else None, query_text=text,
        params=RetrievalParams(), exclude_session=exclude, created_before=LATER,
    )
    return [c.memory_id for c in candidates]


def test_turns_are_stored_once_by_turn_id(store: MemoryStore) -> None:
    turn = Turn(turn_id="t1", session_id="s1", character_id="ava", user_id="u1", role="user", text="hello there",
                timestamp=T0)
    assert store.add_turns([turn]) == [True]
    assert store.add_turns([turn, turn]) == [False, False]
    assert len(store.get_turns("s1")) == 1


def test_a_memory_added_twice_is_indexed_once(store: MemoryStore) -> None:
    memory = _memory(1, "Luna loved the park")
    _add(store, [memory])
    _add(store, [memory])
    assert _search(store, "Luna park") == [memory.memory_id]
    assert store.count(PARTITION) == 1


def test_hybrid_ranking_prefers_the_memory_that_matches(store: MemoryStore) -> None:
    memories = [_memory(1, "My dog Luna loved the park"), _memory(2, "I bought new kitchen tiles"),
                _memory(3, "Work was long and boring today")]
    _add(store, memories)
    assert _search(store, "walking Luna in the park")[0] == memories[0].memory_id
    assert _search(store, "kitchen tiles", vector=False)[0] == memories[1].memory_id


def test_partitions_are_isolated(store: MemoryStore) -> None:
    _add(store, [_memory(1, "my secret is the blue door", user="u1"),
                 _memory(2, "my secret is the blue door", user="u2", session="s2")])
    found = _search(store, "secret blue door", partition=Partition(character_id="ava", user_id="u2"))
    assert found == [memory_id_for("u2-t2")]
    assert _search(store, "secret blue door", partition=Partition(character_id="bob", user_id="u1")) == []


def test_the_current_session_and_the_future_are_left_out(store: MemoryStore) -> None:
    _add(store, [_memory(1, "the lighthouse trip", session="s1"), _memory(2, "the lighthouse again", session="s2")])
    assert _search(store, "lighthouse", exclude="s2") == [memory_id_for("u1-t1")]
    candidates, _ = store.search(PARTITION, query_vector=None, query_text="lighthouse", params=RetrievalParams(),
                                 exclude_session=None, created_before=T0)
    assert candidates == []


def test_traces_round_trip_and_feed_tone_queries(store: MemoryStore) -> None:
    memories = [_memory(1, "my dog Luna died"), _memory(2, "lunch was fine")]
    _add(store, memories)
    grief = Trace(memory_id=memories[0].memory_id, status=TraceStatus.COMPLETE, register="grief", valence=-0.8,
                  intensity=0.9, anchors=("Luna",), kind="emotional", written_at=T0)
    flat = Trace(memory_id=memories[1].memory_id, status=TraceStatus.PENDING, written_at=T0)
    store.put_traces([grief, flat])
    assert store.get_traces([m.memory_id for m in memories]) == {grief.memory_id: grief, flat.memory_id: flat}
    toned = store.tone_candidates(PARTITION, min_intensity=0.6, max_valence=-0.25)
    assert toned.memory_ids == [grief.memory_id] and toned.session_ids == ["s1"]
    assert toned.intensity.tolist() == [0.9] and toned.valence.tolist() == [-0.8]
    assert toned.created_epoch.tolist() == [memories[0].created_at.timestamp()]
    assert store.tone_candidates(PARTITION, min_intensity=0.95, max_valence=-0.25).memory_ids == []


def test_everything_survives_a_restart(factory: StoreFactory, tmp_path: Path) -> None:
    first = factory(tmp_path)
    memory = _memory(1, "Luna loved the park")
    first.add_turns([Turn(turn_id="u1-t1", session_id="s1", character_id="ava", user_id="u1", role="user",
                          text=memory.text, timestamp=memory.created_at)])
    _add(first, [memory])
    trace = Trace(memory_id=memory.memory_id, status=TraceStatus.COMPLETE, register="joy", valence=0.5,
                  intensity=0.5, written_at=T0)
    first.put_traces([trace])
    first.close()
    second = factory(tmp_path)
    try:
        assert second.get_memories([memory.memory_id]) == [memory]
        assert second.get_traces([memory.memory_id]) == {memory.memory_id: trace}
        assert len(second.get_turns("s1")) == 1
        assert _search(second, "Luna park") == [memory.memory_id]
        assert np.allclose(second.get_vectors([memory.memory_id])[0], EMBEDDER.embed([memory.text])[0])
    finally:
        second.close()


def test_a_store_refuses_vectors_of_another_model(tmp_path: Path) -> None:
    EmbeddedStore(tmp_path, embedding_model="model-a", dimension=384).close()
    with pytest.raises(ConfigurationError, match="model-a"):
        EmbeddedStore(tmp_path, embedding_model="model-b", dimension=1024)
