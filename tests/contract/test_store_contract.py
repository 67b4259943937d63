"""The store contract: every MemoryStore backend passes these.

Each test runs against the embedded store and against Weaviate (marked ``weaviate``: a real server from the
session fixture, and a collection prefix of the test's own, so tests never see each other's data).
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.domain.errors import BackendUnavailable, ConfigurationError, NotFound
from engine.domain.models import FactInfo, Leg, Memory, MemoryState, Partition, Trace, TraceStatus, Turn
from engine.domain.ports import LegScores, MemoryStore, SearchRequest
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams
from engine.ingest import memory_id_for
from engine.retrieval import Query, Ranked, lexical_query, query_vector, rank
from tests.contract.conftest import EMBEDDER, StoreFactory

if TYPE_CHECKING:
    from tests.servers.weaviate import WeaviateServer

T0 = datetime(2025, 3, 1, 12, tzinfo=UTC)
PARTITION = Partition(character_id="ava", user_id="u1")
LATER = T0 + timedelta(days=30)


def _memory(i: int, text: str, *, user: str = "u1", session: str = "s1") -> Memory:
    return Memory(memory_id=memory_id_for(f"{user}-t{i}"), turn_id=f"{user}-t{i}", session_id=session,
                  character_id="ava", user_id=user, text=text, created_at=T0 + timedelta(minutes=i))


def _add(store: MemoryStore, memories: list[Memory]) -> None:
    store.add_memories(memories, EMBEDDER.embed([m.text for m in memories]))


def _query(text: str, params: RetrievalParams, *, vector: bool = True, vector_text: str | None = None) -> Query:
    """The query recall would make of a message (no window); ``vector_text``: embed that instead of ``text``."""
    terms, weights = lexical_query(text, (), params)
    unit, scale = query_vector(EMBEDDER.embed([vector_text or text])[0] if vector else None, None, params)
    return Query(vector=unit, cosine_scale=scale, terms=terms, term_weights=weights)


def _legs(store: MemoryStore, query: Query, params: RetrievalParams, *, partition: Partition = PARTITION,
          exclude: str | None = None, before: datetime = LATER, include_archived: bool = False) -> LegScores:
    return store.search(SearchRequest(partition=partition, query_vector=query.vector, query_terms=query.terms,
                                      params=params, exclude_session=exclude, created_before=before,
                                      include_archived=include_archived))


def _ranked(store: MemoryStore, text: str, *, params: RetrievalParams | None = None, vector: bool = True,
            vector_text: str | None = None, partition: Partition = PARTITION, exclude: str | None = None,
            before: datetime = LATER, include_archived: bool = False) -> Ranked:
    """Stage one as recall runs it on one level: the store's legs, ranked by ``engine.retrieval.rank``."""
    params = params or RetrievalParams()
    query = _query(text, params, vector=vector, vector_text=vector_text)
    legs = _legs(store, query, params, partition=partition, exclude=exclude, before=before,
                 include_archived=include_archived)
    return rank(legs, query, params)


def _pool(store: MemoryStore, text: str, *, vector: bool = True, include_archived: bool = False) -> list[str]:
    """The memories the store puts before the ranking (what it may see and the query reaches), in ingest order."""
    params = RetrievalParams()
    return _legs(store, _query(text, params, vector=vector), params, include_archived=include_archived).memory_ids


def _search(store: MemoryStore, text: str, *, partition: Partition = PARTITION, exclude: str | None = None,
            vector: bool = True, include_archived: bool = False) -> list[str]:
    ranked = _ranked(store, text, partition=partition, exclude=exclude, vector=vector,
                     include_archived=include_archived)
    return [c.memory_id for c in ranked.candidates]


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


def test_the_total_counts_every_partition_and_follows_deletions(store: MemoryStore) -> None:
    assert store.total() == 0
    _add(store, [_memory(1, "the blue door", user="u1"), _memory(2, "the red door", user="u2", session="s2"),
                 _memory(3, "the green door", user="u2", session="s2")])
    assert store.total() == 3
    store.delete_memories([memory_id_for("u2-t2")])
    assert store.total() == 2


def test_the_current_session_and_the_future_are_left_out(store: MemoryStore) -> None:
    _add(store, [_memory(1, "the lighthouse trip", session="s1"), _memory(2, "the lighthouse again", session="s2")])
    assert _search(store, "lighthouse", exclude="s2") == [memory_id_for("u1-t1")]
    assert _ranked(store, "lighthouse", vector=False, before=T0).candidates == []


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


def test_a_resolving_trace_round_trips_and_survives_a_restart(factory: StoreFactory, tmp_path: Path) -> None:
    """``Trace.resolves`` and ``resolution_cue`` (written by the write-time pass beside a memory that settles an
    earlier worry) come back from every backend as written, after a restart too."""
    first = factory(tmp_path)
    worry, news = _memory(1, "Worried about the biopsy"), _memory(2, "The biopsy came back clear!", session="s2")
    _add(first, [worry, news])
    trace = Trace(memory_id=news.memory_id, status=TraceStatus.COMPLETE, register="joy", valence=0.7,
                  intensity=0.6, written_at=T0, resolution_cue="the result came back fine (rule)",
                  resolves=(worry.memory_id,))
    first.put_traces([trace])
    assert first.get_traces([news.memory_id]) == {news.memory_id: trace}
    first.close()
    second = factory(tmp_path)
    try:
        assert second.get_traces([news.memory_id]) == {news.memory_id: trace}
    finally:
        second.close()


def test_a_store_refuses_vectors_of_another_model(factory: StoreFactory, tmp_path: Path) -> None:
    factory(tmp_path, embedding_model="model-a", dimension=384).close()
    # "model.a" is another model even where a collection name would spell both the same way.
    with pytest.raises(ConfigurationError, match="model-a"):
        factory(tmp_path, embedding_model="model.a", dimension=384)


def test_the_embedded_store_refuses_another_dimension(tmp_path: Path) -> None:
    EmbeddedStore(tmp_path, embedding_model="model-a", dimension=384).close()
    with pytest.raises(ConfigurationError, match="model-a"):
        EmbeddedStore(tmp_path, embedding_model="model-b", dimension=1024)


def test_the_embedded_store_reads_while_a_write_is_in_progress(tmp_path: Path) -> None:
    """Recall's reads (search, lookups, turns, tone candidates) do not queue behind a write: a write transaction
    held open does not stop them, they see what had committed before it, and they see it once it commits."""
    store = EmbeddedStore(tmp_path, embedding_model=EMBEDDER.model_id, dimension=EMBEDDER.dimension)
    try:
        other = Partition(character_id="ava", user_id="u2")
        luna, walk = _memory(1, "Luna loved the park"), _memory(2, "a long walk by the river", user="u2")
        store.add_turns([Turn(turn_id="u2-t2", session_id="s1", character_id="ava", user_id="u2", role="user",
                              text=walk.text, timestamp=walk.created_at)])
        _add(store, [luna, walk])
        # Both partitions' indexes are loaded (the first read of a partition since start loads it under the write
        # lock, so that no write lands between reading its rows and registering it).
        assert _search(store, "Luna park") == [luna.memory_id]
        assert _search(store, "walk river", partition=other) == [walk.memory_id]
        fact = Memory(memory_id="f1", turn_id="", session_id="s1", character_id="ava", user_id="u1",
                      text="The user lives in Leeds.", created_at=T0, kind="fact",
                      fact=FactInfo(subject="user", relation="lives_in", value="leeds", source="user_stated",
                                    content_hash=hashlib.sha256(b"the user lives in leeds.").hexdigest()))
        inside, release = threading.Event(), threading.Event()

        def held(_: Memory) -> None:  # the write stops half-way, its transaction open and the store's write lock held
            inside.set()
            assert release.wait(30)

        store._before_replacing = held  # type: ignore[method-assign]
        writer = threading.Thread(target=store.write_fact, args=(
            fact, EMBEDDER.embed([fact.text])[0], MemoryState(memory_id="f1", status="active"), ()))
        writer.start()
        try:
            assert inside.wait(30)
            reads: dict[str, object] = {}

            def read() -> None:
                reads["search"] = _search(store, "Luna park")
                reads["other"] = _search(store, "walk river", partition=other)
                reads["memories"] = store.get_memories([luna.memory_id, "f1"])
                reads["turns"] = len(store.get_turns("s1"))
                reads["facts"] = store.list_facts(PARTITION)
                reads["tone"] = store.tone_candidates(other, min_intensity=0.0, max_valence=1.0).memory_ids

            reader = threading.Thread(target=read)
            reader.start()
            reader.join(10)
            assert not reader.is_alive(), "a read waited for the write in progress"
            assert reads == {"search": [luna.memory_id], "other": [walk.memory_id], "memories": [luna],
                             "turns": 1, "facts": [], "tone": []}
        finally:
            release.set()
            writer.join(30)
        assert store.list_facts(PARTITION) == [fact]
        assert store.get_memories(["f1"]) == [fact]
    finally:
        store.close()


def test_the_embedded_store_stays_whole_under_concurrent_writes_and_reads(tmp_path: Path) -> None:
    """Threads adding memories and traces to two partitions while others search them and look them up: no read
    fails or sees half a write, and at the end every memory, trace and lexical entry is there, once."""
    store = EmbeddedStore(tmp_path, embedding_model=EMBEDDER.model_id, dimension=EMBEDDER.dimension)
    users, per_writer, writers = ("u1", "u2"), 40, 2
    texts = [f"walk number {i} with Luna by the river" for i in range(per_writer)]
    vectors = EMBEDDER.embed(texts)
    errors: list[BaseException] = []
    done = threading.Event()

    def write(user: str, writer: int) -> None:
        for i in range(per_writer):
            memory = _memory(writer * 1000 + i, texts[i], user=user, session=f"s{writer}-{i // 10}")
            store.add_memories([memory], vectors[i:i + 1])
            store.put_traces([Trace(memory_id=memory.memory_id, status=TraceStatus.COMPLETE, register="sadness",
                                    valence=-0.6, intensity=0.8, kind="emotional", written_at=T0,
                                    facts=(f"fact{writer}x{i} about Luna.",))])

    def read(user: str) -> None:
        partition = Partition(character_id="ava", user_id=user)
        while not done.is_set():
            found = _legs(store, _query("Luna river walk", RetrievalParams()), RetrievalParams(),
                          partition=partition).memory_ids
            assert len(found) == len(set(found))
            memories = store.get_memories(found)
            assert [m.memory_id for m in memories] == found and all(m.user_id == user for m in memories)
            assert not np.isnan(store.get_vectors(found)).any()
            store.tone_candidates(partition, min_intensity=0.5, max_valence=0.0)

    def guarded(target: Callable[..., None], *args: object) -> Callable[[], None]:
        def run() -> None:
            try:
                target(*args)
            except BaseException as error:  # reported by the test below
                errors.append(error)
        return run

    try:
        for user in users:  # loaded before the writes start, so the reads and writes meet in the indexes
            store.search(SearchRequest(partition=Partition(character_id="ava", user_id=user), query_vector=None,
                                       query_terms=["luna"], params=RetrievalParams(), exclude_session=None,
                                       created_before=LATER))
        readers = [threading.Thread(target=guarded(read, u)) for u in users for _ in range(2)]
        writing = [threading.Thread(target=guarded(write, u, w)) for u in users for w in range(writers)]
        for thread in readers + writing:
            thread.start()
        for thread in writing:
            thread.join(120)
        done.set()
        for thread in readers:
            thread.join(30)
        assert errors == []
        for user in users:
            partition = Partition(character_id="ava", user_id=user)
            assert store.count(partition) == writers * per_writer
            tone = store.tone_candidates(partition, min_intensity=0.5, max_valence=0.0)
            assert len(tone.memory_ids) == writers * per_writer
            legs = _legs(store, _query("fact1x39", RetrievalParams(), vector=False), RetrievalParams(),
                         partition=partition)
            assert legs.memory_ids == [memory_id_for(f"{user}-t1039")]
    finally:
        store.close()


def test_a_memory_sent_again_keeps_its_trace(store: MemoryStore) -> None:
    memory = _memory(1, "Luna loved the park")
    _add(store, [memory])
    trace = Trace(memory_id=memory.memory_id, status=TraceStatus.COMPLETE, register="joy", valence=0.6,
                  intensity=0.5, facts=("The user has a dog called Luna.",), written_at=T0)
    store.put_traces([trace])
    _add(store, [memory])
    assert store.get_traces([memory.memory_id]) == {memory.memory_id: trace}
    assert store.count(PARTITION) == 1


def test_a_trace_needs_its_memory(store: MemoryStore) -> None:
    with pytest.raises(NotFound):
        store.put_traces([Trace(memory_id="m_missing", status=TraceStatus.PENDING, written_at=T0)])


def test_the_facts_of_a_trace_feed_the_lexical_leg(store: MemoryStore) -> None:
    memory = _memory(1, "she is moving next month")
    _add(store, [memory, _memory(2, "work was long")])
    assert _search(store, "Lisbon", vector=False) == []
    store.put_traces([Trace(memory_id=memory.memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                            facts=("The user is moving to Lisbon.",))])
    assert _search(store, "Lisbon", vector=False) == [memory.memory_id]


def test_a_memory_stored_without_a_vector_is_found_lexically_until_it_gets_one(store: MemoryStore) -> None:
    memory, other = _memory(1, "Luna loved the park"), _memory(2, "kitchen tiles again")
    store.add_memories([memory], None)
    _add(store, [other])
    assert store.unembedded(10) == [memory]
    assert np.isnan(store.get_vectors([memory.memory_id])).all()

    def found() -> list[tuple[str, tuple[Leg, ...]]]:
        candidates = _ranked(store, "Luna park").candidates
        assert all(0.0 <= c.relevance <= 1.0 for c in candidates)
        return [(c.memory_id, c.legs) for c in candidates]

    assert found() == [(memory.memory_id, (Leg.LEXICAL,))]
    store.set_vectors([memory.memory_id], EMBEDDER.embed([memory.text]))
    assert store.unembedded(10) == []
    assert np.allclose(store.get_vectors([memory.memory_id])[0], EMBEDDER.embed([memory.text])[0])
    assert found() == [(memory.memory_id, (Leg.VECTOR, Leg.LEXICAL))]


def test_a_lexical_only_hit_is_capped(store: MemoryStore) -> None:
    memories = [_memory(1, "Luna Luna Luna"), _memory(2, "my dog Luna loved the park")]
    _add(store, memories)
    params = RetrievalParams(fused_relative_floor=0.0)  # the capped hit stays, below half the best
    ranked = _ranked(store, "Luna", vector_text="the park", params=params)
    candidates = ranked.candidates
    by_id = {c.memory_id: c for c in candidates}
    assert by_id[memories[0].memory_id].legs == (Leg.LEXICAL,)
    assert by_id[memories[0].memory_id].relevance <= params.lexical_only_cap
    assert by_id[memories[1].memory_id].legs == (Leg.VECTOR, Leg.LEXICAL)
    assert candidates[0].memory_id == memories[1].memory_id
    assert ranked.lexical == len(candidates) == 2


def test_the_time_filter_includes_the_moment_itself(store: MemoryStore) -> None:
    memory = _memory(1, "the lighthouse trip")
    _add(store, [memory])

    def found(before: datetime) -> list[str]:
        return [c.memory_id for c in _ranked(store, "lighthouse", vector=False, before=before).candidates]

    assert found(memory.created_at) == [memory.memory_id]
    assert found(memory.created_at - timedelta(seconds=1)) == []


def test_turns_come_back_in_the_order_they_were_sent(store: MemoryStore) -> None:
    turns = [Turn(turn_id=f"t{i}", session_id="s1", character_id="ava", user_id="u1",
                  role="user" if i % 2 == 0 else "character", text=f"turn number {i}",
                  timestamp=T0 - timedelta(minutes=i))  # clocks disagree; the order sent is what counts
             for i in range(5)]
    assert store.add_turns(turns[:3]) == [True, True, True]
    assert store.add_turns(turns[2:]) == [False, True, True]
    assert store.get_turns("s1") == turns
    assert store.get_turns("s-unknown") == []


def test_sessions_track_closing_and_pending_traces(store: MemoryStore) -> None:
    memories = [_memory(1, "first thing"), _memory(2, "second thing")]
    _add(store, memories)
    assert store.session_memories("s1") == memories
    assert store.session_memories("s-unknown") == []
    assert store.closed_sessions(["s1", "s9"]) == set()
    store.put_traces([Trace(memory_id=memories[0].memory_id, status=TraceStatus.PENDING, written_at=T0)])
    assert store.pending_sessions() == []  # pending, but the session is still open
    store.mark_session_closed("s1", T0 + timedelta(hours=1))
    assert store.closed_sessions(["s1", "s9"]) == {"s1"}
    assert store.pending_sessions() == ["s1"]
    store.put_traces([Trace(memory_id=m.memory_id, status=TraceStatus.COMPLETE, written_at=T0) for m in memories])
    assert store.pending_sessions() == []


def test_a_session_can_close_before_its_turns_arrive(store: MemoryStore) -> None:
    store.mark_session_closed("s1", T0)
    assert store.closed_sessions(["s1"]) == {"s1"}
    turn = Turn(turn_id="t1", session_id="s1", character_id="ava", user_id="u1", role="user", text="late hello",
                timestamp=T0)
    assert store.add_turns([turn]) == [True]
    memory = _memory(1, "late hello")
    _add(store, [memory])
    store.put_traces([Trace(memory_id=memory.memory_id, status=TraceStatus.PENDING, written_at=T0)])
    assert store.get_turns("s1") == [turn] and store.session_memories("s1") == [memory]
    assert store.pending_sessions() == ["s1"]


def test_lookups_by_id_keep_the_callers_order(store: MemoryStore) -> None:
    memories = [_memory(i, f"memory number {i}") for i in range(3)]
    _add(store, memories)
    ids = [memories[2].memory_id, "m_missing", memories[0].memory_id]
    assert store.get_memories(ids) == [memories[2], memories[0]]
    vectors = store.get_vectors(ids)
    assert vectors.shape == (3, EMBEDDER.dimension) and np.isnan(vectors[1]).all()
    assert np.allclose(vectors[[0, 2]], EMBEDDER.embed([memories[2].text, memories[0].text]))
    assert store.get_traces(ids) == {}
    assert store.get_memories([]) == [] and store.get_traces([]) == {}
    assert store.count(PARTITION) == 3
    assert store.count(Partition(character_id="ava", user_id="nobody")) == 0


def test_tone_candidates_and_counts_stay_in_their_partition(store: MemoryStore) -> None:
    mine, theirs = _memory(1, "my dog Luna died"), _memory(2, "my dog Luna died", user="u2", session="s2")
    _add(store, [mine, theirs])
    store.put_traces([Trace(memory_id=m.memory_id, status=TraceStatus.COMPLETE, register="grief", valence=-0.8,
                            intensity=0.9, kind="emotional", written_at=T0) for m in (mine, theirs)])
    toned = store.tone_candidates(Partition(character_id="ava", user_id="u2"), min_intensity=0.6, max_valence=-0.25)
    assert toned.memory_ids == [theirs.memory_id] and toned.session_ids == ["s2"]
    empty = store.tone_candidates(Partition(character_id="bob", user_id="u1"), min_intensity=0.6, max_valence=0.0)
    assert empty.memory_ids == [] and len(empty.episode) == len(empty.created_epoch) == 0
    assert store.count(PARTITION) == 1


def test_one_episode_per_session_and_register(store: MemoryStore) -> None:
    memories = [_memory(1, "Luna died", session="s1"), _memory(2, "I miss Luna", session="s1"),
                _memory(3, "so angry at the vet", session="s1"), _memory(4, "Luna's collar", session="s2")]
    _add(store, memories)
    registers = ["grief", "grief", "anger", "grief"]
    store.put_traces([Trace(memory_id=m.memory_id, status=TraceStatus.COMPLETE, register=r, valence=-0.7,
                            intensity=0.8, kind="emotional", written_at=T0)
                      for m, r in zip(memories, registers, strict=True)])
    toned = store.tone_candidates(PARTITION, min_intensity=0.6, max_valence=-0.25)
    assert toned.memory_ids == [m.memory_id for m in memories]
    episode = toned.episode.tolist()
    assert episode[0] == episode[1] and len(set(episode)) == 3


def test_substring_search_is_the_last_resort(store: MemoryStore) -> None:
    memories = [_memory(1, "Parking near the lighthouse"), _memory(2, "kitchen tiles", session="s2"),
                _memory(3, "the lighthouse keeper", session="s3")]
    _add(store, memories)

    def found(*, exclude: str | None = None, before: datetime = LATER, partition: Partition = PARTITION
              ) -> list[tuple[str, float]]:
        candidates = store.substring_search(partition, query_text="park lighthouse", limit=5,
                                            exclude_session=exclude, created_before=before)
        assert all(c.legs == (Leg.SUBSTRING,) for c in candidates)
        return [(c.memory_id, c.relevance) for c in candidates]

    assert found() == [(memories[0].memory_id, 1.0), (memories[2].memory_id, 0.5)]
    assert found(exclude="s3") == [(memories[0].memory_id, 1.0)]
    assert found(before=T0) == []
    assert found(partition=Partition(character_id="ava", user_id="u2")) == []


def test_deleted_memories_are_forgotten(store: MemoryStore) -> None:
    memories = [_memory(1, "my secret is the blue door"), _memory(2, "the blue door is open")]
    _add(store, memories)
    store.put_traces([Trace(memory_id=memories[0].memory_id, status=TraceStatus.PENDING, written_at=T0)])
    store.mark_session_closed("s1", T0)
    assert store.pending_sessions() == ["s1"]
    store.delete_memories([memories[0].memory_id, "m_missing"])
    assert _search(store, "blue door") == [memories[1].memory_id]
    assert store.get_memories([m.memory_id for m in memories]) == [memories[1]]
    assert store.get_traces([memories[0].memory_id]) == {}
    assert np.isnan(store.get_vectors([memories[0].memory_id])).all()
    assert store.session_memories("s1") == [memories[1]]
    assert store.count(PARTITION) == 1
    assert store.pending_sessions() == []


# -- stage one's leg material: the same numbers from every backend ------------------------------------------

CORPUS = (  # (turn number, text, session, facts of its trace)
    (1, "My dog Luna loved the park", "s1", ()),
    (2, "Luna chased a ball in the park, the park was muddy", "s1", ()),
    (3, "I bought new kitchen tiles", "s2", ()),  # stored while the embedder was down: no vector
    # A fact sentence said twice is indexed once.
    (4, "Work was long and boring today", "s2", ("The user works at the Lisbon office.",
                                                 "The user works at the Lisbon office.",
                                                 "The user's dog is called Luna.")),
)
FACT_TEXT = "The user has a dog called Luna."


def fixed_corpus(store: MemoryStore, partition: Partition = PARTITION) -> dict[str, list[str]]:
    """Store the fixed corpus (turns with trace facts, one without a vector, a fact record) in a partition;
    return each memory's index terms as both stores must count them, by memory id in ingest order."""
    user = partition.user_id
    memories = [_memory(i, text, user=user, session=f"{user}-{session}") for i, text, session, _ in CORPUS]
    memories = [m.model_copy(update={"character_id": partition.character_id}) for m in memories]
    _add(store, memories[:2])
    store.add_memories([memories[2]], None)
    _add(store, memories[3:])
    store.put_traces([Trace(memory_id=m.memory_id, status=TraceStatus.COMPLETE, written_at=T0, facts=facts)
                      for m, (*_, facts) in zip(memories, CORPUS, strict=True) if facts])
    fact = Memory(memory_id=f"f_dog_{user}", turn_id="", session_id=f"{user}-s2", character_id=partition.character_id,
                  user_id=user, text=FACT_TEXT, created_at=T0 + timedelta(hours=1), kind="fact",
                  fact=FactInfo(subject="user", relation="has_pet", value="Luna", source="user_stated",
                                content_hash=hashlib.sha256(FACT_TEXT.encode()).hexdigest(),
                                provenance=(memories[0].memory_id,)))
    store.write_fact(fact, EMBEDDER.embed([FACT_TEXT])[0], MemoryState(memory_id=fact.memory_id), ())
    indexed = {m.memory_id: terms(m.text) + [t for f in dict.fromkeys(facts) for t in terms(f)]
               for m, (*_, facts) in zip(memories, CORPUS, strict=True)}
    indexed[fact.memory_id] = terms(FACT_TEXT)
    return indexed


def test_search_returns_each_pool_memorys_leg_material(store: MemoryStore) -> None:
    """Term frequencies, lengths and the partition's statistics are counted over the memory's text and its
    trace's distinct fact sentences, the same way by every backend; the ranking is the engine's."""
    indexed = fixed_corpus(store)
    ids = list(indexed)
    params = RetrievalParams()
    query = _query("Luna at the park in Lisbon, tiles, zyzzyva", params)
    assert query.terms == ["luna", "park", "lisbon", "tile", "zyzzyva"]

    legs = _legs(store, query, params)
    # Every memory: those with a vector by cosine (a small partition fits the pool), the unembedded one by its
    # term; in ingest order.
    assert legs.memory_ids == ids
    counts = [Counter(indexed[m]) for m in ids]
    assert legs.term_frequency.tolist() == [[float(c[t]) for t in query.terms] for c in counts]
    assert legs.doc_length.tolist() == [float(len(indexed[m])) for m in ids]
    assert legs.document_frequency.tolist() == [float(sum(t in c for c in counts)) for t in query.terms]
    assert legs.documents == len(ids)
    assert legs.average_doc_length == pytest.approx(sum(len(t) for t in indexed.values()) / len(ids))
    assert legs.excluded_current_session == 0
    assert query.vector is not None
    texts = [m.text for m in store.get_memories(ids)]
    expected = EMBEDDER.embed(texts).astype(np.float64) @ query.vector.astype(np.float64)
    unembedded = ids.index(memory_id_for("u1-t3"))
    assert np.isnan(legs.cosine[unembedded])
    others = [row for row in range(len(ids)) if row != unembedded]
    np.testing.assert_allclose(legs.cosine[others], expected[others], atol=1e-5)

    # Without a query vector: only the memories a query term occurs in, and no cosine.
    lexical = _legs(store, _query("Luna at the park in Lisbon, tiles, zyzzyva", params, vector=False), params)
    assert lexical.memory_ids == [m for m in ids if set(indexed[m]) & set(query.terms)]
    assert np.isnan(lexical.cosine).all()
    assert lexical.document_frequency.tolist() == legs.document_frequency.tolist()
    assert (lexical.documents, lexical.average_doc_length) == (legs.documents, legs.average_doc_length)


def test_statistics_follow_the_writes(store: MemoryStore) -> None:
    """New memories, a trace that adds fact terms and deletions change the counts at once."""
    indexed = fixed_corpus(store)
    params = RetrievalParams()
    query = _query("Lisbon lighthouse", params, vector=False)
    before = _legs(store, query, params)
    assert before.document_frequency.tolist() == [1.0, 0.0] and before.documents == len(indexed)

    lighthouse = _memory(9, "the lighthouse at dawn", session="s3")
    _add(store, [lighthouse])
    store.put_traces([Trace(memory_id=lighthouse.memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                            facts=("The user visited Lisbon and its lighthouse.",))])
    after = _legs(store, query, params)
    assert after.document_frequency.tolist() == [2.0, 1.0] and after.documents == len(indexed) + 1
    row = after.memory_ids.index(lighthouse.memory_id)
    assert after.term_frequency[row].tolist() == [1.0, 2.0]
    assert after.doc_length[row] == len(terms(lighthouse.text) + terms("The user visited Lisbon and its lighthouse."))

    store.delete_memories([lighthouse.memory_id, memory_id_for("u1-t4")])
    gone = _legs(store, query, params)
    assert gone.memory_ids == [] and gone.documents == len(indexed) - 1
    remaining = [m for m in indexed if m != memory_id_for("u1-t4")]
    assert _legs(store, _query("Luna park", params), params).average_doc_length == pytest.approx(
        sum(len(indexed[m]) for m in remaining) / len(remaining))


def test_excluded_current_session_counts_what_recall_would_otherwise_see(store: MemoryStore) -> None:
    memories = [_memory(1, "the lighthouse at dawn"), _memory(2, "the lighthouse in the fog"),
                _memory(3, "the lighthouse keeper"), _memory(4, "the lighthouse again", session="s2"),
                _memory(50, "the lighthouse much later")]  # after the turn being answered
    _add(store, memories)
    store.put_states([MemoryState(memory_id=memories[1].memory_id, status="archived", prior_status="active"),
                      MemoryState(memory_id=memories[2].memory_id, status="revoked")])
    params = RetrievalParams()
    query = _query("lighthouse", params)
    at = T0 + timedelta(minutes=10)

    def legs(exclude: str | None, *, include_archived: bool = False) -> LegScores:
        return _legs(store, query, params, exclude=exclude, before=at, include_archived=include_archived)

    found = legs("s1")
    assert found.memory_ids == [memories[3].memory_id] and found.excluded_current_session == 1
    assert legs("s1", include_archived=True).excluded_current_session == 2  # the archived one counts then
    assert legs("s2").excluded_current_session == 1
    assert legs(None).excluded_current_session == 0 and legs("s-unknown").excluded_current_session == 0
    nothing = store.search(SearchRequest(partition=PARTITION, query_vector=None, query_terms=[], params=params,
                                         exclude_session="s1", created_before=at))
    assert nothing.memory_ids == [] and nothing.excluded_current_session == 1
    assert rank(found, query, params).excluded_current_session == 1


def test_archived_revoked_and_provisional_memories_are_never_in_the_pool(store: MemoryStore) -> None:
    memories = [_memory(i, f"the river walk number {i}") for i in range(1, 5)]
    _add(store, memories)
    store.put_states([MemoryState(memory_id=memories[0].memory_id, status="archived", prior_status="active"),
                      MemoryState(memory_id=memories[1].memory_id, status="revoked"),
                      MemoryState(memory_id=memories[2].memory_id, status="provisional")])
    for vector in (True, False):
        assert _pool(store, "river walk", vector=vector) == [memories[3].memory_id]
        assert _pool(store, "river walk", vector=vector, include_archived=True) == [
            memories[0].memory_id, memories[3].memory_id]
    # The statistics still count every memory of the partition, as BM25's corpus.
    params = RetrievalParams()
    legs = _legs(store, _query("river walk", params), params)
    assert legs.documents == 4 and legs.document_frequency.tolist() == [4.0, 4.0]


def test_the_profiles_bm25_k1_and_b_shape_the_lexical_scores(store: MemoryStore) -> None:
    texts = ["Luna barked", "Luna ran across the wide green meadow chasing seven yellow butterflies",
             "Luna Luna Luna", "quiet evening reading books"]
    memories = [_memory(i, text) for i, text in enumerate(texts, start=1)]
    _add(store, memories)
    lengths = [len(terms(text)) for text in texts]
    average = sum(lengths) / len(lengths)
    seen = []
    for k1, b in ((1.2, 0.75), (2.0, 0.3), (0.5, 1.0)):
        params = RetrievalParams(bm25_k1=k1, bm25_b=b, fused_floor=0.0, fused_relative_floor=0.0)
        ranked = _ranked(store, "Luna", params=params, vector=False)
        scores = {c.memory_id: c.lexical_score for c in ranked.candidates}
        # One query term: the normalised BM25 is its saturated term frequency (the idf divides out).
        expected = {}
        for memory, text, length in zip(memories[:3], texts, lengths, strict=False):
            tf = terms(text).count("luna")
            expected[memory.memory_id] = min(1.0, tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)))
        assert scores == pytest.approx(expected)
        seen.append(scores[memories[1].memory_id])
    assert len(set(seen)) == 3  # each profile scores the long memory differently


def test_the_turn_before_a_memory_joins_its_lexical_document(store: MemoryStore) -> None:
    """``Memory.preceding`` is searched with the memory's own words, until the turn it quotes is forgotten."""
    question = _memory(1, "What kind of dog did you get?")
    answer = _memory(2, "A corgi puppy!").model_copy(update={"preceding": question.text})
    _add(store, [question, answer])
    assert store.get_memories([answer.memory_id]) == [answer]
    params = RetrievalParams()
    legs = _legs(store, _query("dog", params, vector=False), params)
    assert legs.memory_ids == [question.memory_id, answer.memory_id]
    assert legs.doc_length.tolist() == [len(terms(question.text)), len(terms(answer.text) + terms(question.text))]
    store.delete_memories([question.memory_id])
    assert _pool(store, "dog", vector=False) == []
    assert store.get_memories([answer.memory_id]) == [answer.model_copy(update={"preceding": ""})]
    assert _legs(store, _query("corgi", params, vector=False), params).doc_length.tolist() == [
        len(terms(answer.text))]


# -- Weaviate only --------------------------------------------------------------------------------------------


@pytest.mark.weaviate
def test_weaviate_keeps_one_collection_per_embedding_model(weaviate_server: WeaviateServer) -> None:
    from engine.adapters.weaviate import WeaviateStore
    from engine.domain.errors import InvalidInput

    prefix = f"Models{uuid.uuid4().hex[:10]}"

    def open_store(dimension: int) -> WeaviateStore:
        return WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, embedding_model="model-a",
                             dimension=dimension, collection_prefix=prefix)

    small, large = open_store(4), open_store(8)
    try:
        memory = _memory(1, "Luna loved the park")
        small.add_memories([memory], np.eye(4, dtype=np.float32)[:1])
        assert small.get_memories([memory.memory_id]) == [memory]
        assert large.get_memories([memory.memory_id]) == [] and large.count(PARTITION) == 0
        with pytest.raises(InvalidInput):
            small.add_memories([_memory(2, "wrong size")], np.ones((1, 8), dtype=np.float32))
    finally:
        small.close()
        large.close()
        weaviate_server.drop_collections(prefix)


def test_an_unreachable_weaviate_is_unavailable(tmp_path: Path) -> None:
    from engine.adapters.weaviate import WeaviateStore

    with socket.socket() as http, socket.socket() as grpc:
        http.bind(("127.0.0.1", 0))
        grpc.bind(("127.0.0.1", 0))
        ports = http.getsockname()[1], grpc.getsockname()[1]  # nothing listens once the sockets are closed
    with pytest.raises(BackendUnavailable):
        WeaviateStore(f"http://127.0.0.1:{ports[0]}", grpc_port=ports[1], embedding_model="m", dimension=4,
                      timeout_s=2)


@pytest.mark.weaviate
def test_a_weaviate_that_goes_away_is_unavailable(weaviate_server: WeaviateServer) -> None:
    from engine.adapters.weaviate import WeaviateStore
    from tests.servers.weaviate import binary_path, start

    server = start(binary_path())  # a server of this test's own, to stop under the store
    try:
        store = WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=EMBEDDER.model_id,
                              dimension=EMBEDDER.dimension, timeout_s=5)
        memory = _memory(1, "Luna loved the park")
        _add(store, [memory])
        server.stop()
        # An HTTP write meets the outage first (a gRPC call would sit in the client's minute of retries).
        with pytest.raises(BackendUnavailable):
            store.put_traces([Trace(memory_id=memory.memory_id, status=TraceStatus.PENDING, written_at=T0)])
        started = time.monotonic()
        with pytest.raises(BackendUnavailable):
            _search(store, "Luna park")
        with pytest.raises(BackendUnavailable):
            _add(store, [_memory(2, "the lighthouse")])
        assert time.monotonic() - started < 5  # known to be down: answered at once
        store.close()
    finally:
        server.stop()


def test_memories_list_a_page_at_a_time_in_ingest_order(store: MemoryStore) -> None:
    memories = [_memory(i, f"memory number {i}") for i in range(5)]
    _add(store, memories[:3])
    _add(store, memories[3:])
    _add(store, [_memory(9, "someone else's", user="u2", session="s9")])
    assert store.list_memories(PARTITION, offset=0, limit=2) == memories[:2]
    assert store.list_memories(PARTITION, offset=2, limit=10) == memories[2:]
    assert store.list_memories(Partition(character_id="ava", user_id="nobody"), offset=0, limit=5) == []


def test_long_reads_page_past_the_first_page(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived partition outgrows one read (Weaviate answers at most 10,000 objects per offset window)."""
    import engine.adapters.weaviate.base as weaviate_base

    monkeypatch.setattr(weaviate_base, "PAGE", 2)  # several pages from seven objects
    memories = [_memory(i, f"a hard day number {i}") for i in range(7)]
    _add(store, memories)
    store.put_traces([Trace(memory_id=m.memory_id, status=TraceStatus.COMPLETE, register="grief", valence=-0.8,
                            intensity=0.9, kind="emotional", written_at=T0) for m in memories])
    found = store.tone_candidates(PARTITION, min_intensity=0.6, max_valence=-0.25)
    assert found.memory_ids == [m.memory_id for m in memories]
    assert store.session_memories("s1") == memories
