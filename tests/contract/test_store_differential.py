"""Stage one on both backends at once: the embedded store and Weaviate, given the same data, hand
``engine.retrieval.rank`` the same leg material (pool, term frequencies, lengths, document frequencies, number of
documents, average length, cosines, excluded memories), so recall ranks the same way and its trace reports the same
counts. (The store contract checks each backend against expected numbers; this checks them against each other.)"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import MemoryState, Partition, RecallQuery, RecallResult, Trace, TraceStatus, Turn, WindowTurn
from engine.domain.ports import LegScores, MemoryStore, SearchRequest
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams
from engine.retrieval import Query, lexical_query, query_vector, rank
from engine.service import Engine
from tests.contract.conftest import EMBEDDER
from tests.contract.test_store_contract import LATER, PARTITION, T0, _add, _memory, fixed_corpus
from tests.fakes import KeywordClassifier

if TYPE_CHECKING:
    from tests.servers.weaviate import WeaviateServer

pytestmark = pytest.mark.weaviate
OTHER = Partition(character_id="ava", user_id="u2")


def _weaviate(server: WeaviateServer, prefix: str) -> MemoryStore:
    from engine.adapters.weaviate import WeaviateStore

    return WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=EMBEDDER.model_id,
                         dimension=EMBEDDER.dimension, collection_prefix=prefix, timeout_s=30)


def _load(store: MemoryStore) -> None:
    """The fixed corpus in two partitions, then what a partition lives through: more sessions, a trace that
    completes with facts, a vector filled in late, states, a deletion."""
    fixed_corpus(store)
    fixed_corpus(store, OTHER)
    later = [_memory(10, "Luna found a stick by the river", session="s3"),
             _memory(11, "the river was cold, Luna swam anyway", session="s3"),
             _memory(12, "I miss the Lisbon office sometimes", session="s3"),
             _memory(13, "kitchen tiles again, the grout is cracked", session="s4"),
             _memory(14, "a long walk along the park and the river", session="s4"),
             _memory(15, "my sister visited Lisbon with her dog", session="s4"),
             _memory(16, "we forgot the ball at the park", session="s4")]
    asked = "What kind of dog did your sister bring to Lisbon?"  # a character turn: only the answer's context
    answers = [_memory(17, "A corgi puppy!", session="s4").model_copy(update={"preceding": asked}),
               _memory(18, "and it rained all day", session="s4").model_copy(update={"preceding": later[6].text})]
    _add(store, later[:5] + answers)
    store.add_memories(later[5:], None)
    store.set_vectors([later[5].memory_id], EMBEDDER.embed([later[5].text]))
    store.put_traces([Trace(memory_id=later[0].memory_id, status=TraceStatus.PENDING, written_at=T0)])
    store.put_traces([Trace(memory_id=later[0].memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                            facts=("The user's dog Luna likes sticks.",)),
                      Trace(memory_id=later[2].memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                            facts=("The user used to work at the Lisbon office.",))])
    store.put_states([MemoryState(memory_id=later[1].memory_id, status="archived", prior_status="active"),
                      MemoryState(memory_id=later[3].memory_id, status="revoked"),
                      MemoryState(memory_id=later[4].memory_id, status="provisional")])
    store.delete_memories([_memory(2, "").memory_id, later[6].memory_id])  # 18 loses the turn it followed


@dataclass(frozen=True)
class Case:
    message: str
    window: tuple[str, ...] = ()
    vector: bool = True
    exclude: str | None = None
    include_archived: bool = False
    before: datetime = LATER
    partition: Partition = PARTITION


CASES = (
    Case("Luna at the park"),
    Case("Luna at the park", vector=False),
    Case("the river and Lisbon", window=("we talked about the office", "and my dog Luna")),
    Case("the river and Lisbon", exclude="s3"),
    Case("the river and Lisbon", exclude="s3", include_archived=True),
    Case("kitchen tiles and the ball", exclude="u1-s2", vector=False),
    Case("Luna river", before=T0 + timedelta(minutes=11)),
    Case("sticks", exclude="s4"),
    Case("a dog in Lisbon, the ball at the park", vector=False),
    Case("an unknown zyzzyva"),
    Case("an unknown zyzzyva", vector=False),
    Case("Luna at the park in Lisbon", partition=OTHER, exclude="u2-s1"),
)


def _query(case: Case, params: RetrievalParams) -> Query:
    terms, weights = lexical_query(case.message, case.window, params)
    window = EMBEDDER.embed(list(case.window)) if case.window else None
    unit, scale = query_vector(EMBEDDER.embed([case.message])[0] if case.vector else None, window, params)
    return Query(vector=unit, cosine_scale=scale, terms=terms, term_weights=weights)


def _legs(store: MemoryStore, case: Case, query: Query, params: RetrievalParams) -> LegScores:
    return store.search(SearchRequest(partition=case.partition, query_vector=query.vector, query_terms=query.terms,
                                      params=params, exclude_session=case.exclude, created_before=case.before,
                                      include_archived=case.include_archived))


def _assert_same_legs(embedded: LegScores, weaviate: LegScores, what: str) -> None:
    assert weaviate.memory_ids == embedded.memory_ids, what
    assert weaviate.term_frequency.tolist() == embedded.term_frequency.tolist(), what
    assert weaviate.doc_length.tolist() == embedded.doc_length.tolist(), what
    assert weaviate.excluded_current_session == embedded.excluded_current_session, what
    if embedded.memory_ids:  # the statistics are what ranks a pool; an empty one has nothing to rank
        assert weaviate.document_frequency.tolist() == embedded.document_frequency.tolist(), what
        assert weaviate.documents == embedded.documents, what
        assert weaviate.average_doc_length == pytest.approx(embedded.average_doc_length, rel=1e-12), what
    assert np.isnan(weaviate.cosine).tolist() == np.isnan(embedded.cosine).tolist(), what
    np.testing.assert_allclose(weaviate.cosine, embedded.cosine, atol=1e-5, err_msg=what)


@dataclass(frozen=True)
class Stores:
    embedded: MemoryStore
    weaviate: MemoryStore
    prefix: str  # the Weaviate store's collection prefix


@pytest.fixture
def stores(tmp_path: Path, weaviate_server: WeaviateServer) -> Iterator[Stores]:
    prefix = f"Differential{uuid.uuid4().hex[:10]}"
    embedded = EmbeddedStore(tmp_path, embedding_model=EMBEDDER.model_id, dimension=EMBEDDER.dimension)
    weaviate = _weaviate(weaviate_server, prefix)
    try:
        _load(embedded)
        _load(weaviate)
        yield Stores(embedded, weaviate, prefix)
    finally:
        embedded.close()
        weaviate.close()
        weaviate_server.drop_collections(prefix)


def test_both_stores_hand_the_ranking_the_same_legs(stores: Stores) -> None:
    embedded, weaviate = stores.embedded, stores.weaviate
    profiles = (RetrievalParams(), RetrievalParams(bm25_k1=2.0, bm25_b=0.3, fused_relative_floor=0.2),
                RetrievalParams(bm25_k1=0.5, bm25_b=1.0, vector_weight=0.3, lexical_weight=0.7))
    for params in profiles:
        for case in CASES:
            query = _query(case, params)
            what = f"{case} with k1={params.bm25_k1} b={params.bm25_b}"
            legs = _legs(embedded, case, query, params), _legs(weaviate, case, query, params)
            _assert_same_legs(*legs, what)
            ranked = [rank(leg, query, params) for leg in legs]
            assert [(c.memory_id, c.legs, c.tier) for c in ranked[1].candidates] == [
                (c.memory_id, c.legs, c.tier) for c in ranked[0].candidates], what
            np.testing.assert_allclose([c.relevance for c in ranked[1].candidates],
                                       [c.relevance for c in ranked[0].candidates], atol=1e-5, err_msg=what)
            assert (ranked[1].vector, ranked[1].lexical, ranked[1].dropped_below_floor,
                    ranked[1].excluded_current_session) == (ranked[0].vector, ranked[0].lexical,
                                                            ranked[0].dropped_below_floor,
                                                            ranked[0].excluded_current_session), what


def test_another_process_counts_the_same(stores: Stores, weaviate_server: WeaviateServer) -> None:
    """A second process (another store on the same collections) reads the statistics from the server, and
    catches up with what the first one writes after it has read them."""
    embedded, weaviate = stores.embedded, stores.weaviate
    second = _weaviate(weaviate_server, stores.prefix)
    try:
        params = RetrievalParams()
        case = Case("Luna at the park in Lisbon")
        query = _query(case, params)
        _assert_same_legs(_legs(embedded, case, query, params), _legs(second, case, query, params), "cold")
        for store in (embedded, weaviate):  # the first process writes; the second only reads
            extra = _memory(30, "Luna and the Lisbon park, once more", session="s5")
            _add(store, [extra])
            store.put_traces([Trace(memory_id=extra.memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                                    facts=("The user took Luna to a park in Lisbon.",))])
        _assert_same_legs(_legs(embedded, case, query, params), _legs(second, case, query, params), "caught up")

        # The second process forgets a memory the first one counted: the first notices the count and reads the
        # tenant again in the background, keeping its statistics meanwhile.
        forgotten = _memory(30, "").memory_id
        embedded.delete_memories([forgotten])
        second.delete_memories([forgotten])
        expected = _legs(embedded, case, query, params)
        deadline = time.monotonic() + 10
        while (found := _legs(weaviate, case, query, params)).documents != expected.documents:
            assert time.monotonic() < deadline, "the background read never caught up"
            time.sleep(0.05)
        _assert_same_legs(expected, found, "after another process deleted")
    finally:
        second.close()


def test_a_write_made_while_the_statistics_are_read_is_not_lost(stores: Stores) -> None:
    """A read of the terms from the server and this process's own writes during it are reconciled: the writes
    are replayed on what was read."""
    from engine.adapters.weaviate import WeaviateStore
    from engine.adapters.weaviate.schema import tenant_for
    from engine.adapters.weaviate.search import TenantTerms

    weaviate = stores.weaviate
    assert isinstance(weaviate, WeaviateStore)
    tenant = tenant_for(PARTITION)
    added, deleted = _memory(40, "Luna by the Lisbon river", session="s6"), _memory(1, "").memory_id

    def read() -> list[tuple[str, str | None]]:
        before = [(obj.properties["memory_id"], obj.properties["terms"])
                  for obj in weaviate._in(tenant).iterator(return_properties=["memory_id", "terms"])]
        _add(weaviate, [added])  # written while the read was under way, after what it saw
        weaviate.put_traces([Trace(memory_id=added.memory_id, status=TraceStatus.COMPLETE, written_at=T0,
                                   facts=("The user walked Luna in Lisbon.",))])
        weaviate.delete_memories([deleted])
        return before

    fresh = TenantTerms()
    weaviate._statistics.read(tenant, read, fresh, install=True)
    assert deleted not in fresh.terms
    assert fresh.terms[added.memory_id].split() == terms(added.text) + terms("The user walked Luna in Lisbon.")
    assert weaviate._statistics.tenants[tenant] is fresh and fresh.documents == weaviate.count(PARTITION)


def test_statistics_read_again_in_the_background_stay_the_same(stores: Stores,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.adapters.weaviate.search as weaviate_search

    monkeypatch.setattr(weaviate_search, "STATS_REREAD_S", 0.0)  # every search starts a read of the whole tenant
    params = RetrievalParams()
    for case in CASES:
        query = _query(case, params)
        _assert_same_legs(_legs(stores.embedded, case, query, params),
                          _legs(stores.weaviate, case, query, params), f"{case} (re-reading)")
    deadline = time.monotonic() + 10
    while any(s.rereading for s in stores.weaviate._statistics.tenants.values()):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline
        time.sleep(0.05)


# -- the recall trace, through an engine on each backend ---------------------------------------------------


def _say(engine: Engine, session: str, texts: list[str], at: datetime) -> None:
    turns = [Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id="tester", role="user",
                  text=text, timestamp=at + timedelta(minutes=i)) for i, text in enumerate(texts)]
    engine.ingest(turns)


CONVERSATION = (
    ("c1", ["I live in Leeds and the rain here is relentless.", "My dog Luna loves the park by the river.",
            "Work at the office was long and boring today."], True),
    ("c2", ["Luna chased a ball into the river, I was so worried.", "My sister lives in Lisbon.",
            "We bought new kitchen tiles for the flat."], True),
    ("c3", ["Big news, I moved to Lisbon last week for the new job.", "Luna loves the new park here."], True),
    ("c4", ["Still unpacking boxes in Lisbon.", "The river here is lovely at night."], False),  # still open
)
RECALLS = (
    ("how is Luna doing at the park?", "c4", ()),
    ("tell me about the river", "c4", ("I was thinking about Luna", "and the rain in Leeds")),
    ("where do I live now?", None, ()),
    ("kitchen tiles", "c4", ()),
    ("an unknown zyzzyva", "c4", ()),
)


@pytest.fixture
def engines(tmp_path: Path, weaviate_server: WeaviateServer) -> Iterator[tuple[Engine, Engine]]:
    prefix = f"DiffEngine{uuid.uuid4().hex[:10]}"
    embedded = Engine(store=EmbeddedStore(tmp_path / "data", embedding_model=EMBEDDER.model_id,
                                          dimension=EMBEDDER.dimension),
                      embedder=EMBEDDER, classifier=KeywordClassifier(), ledger=SqliteLedger(tmp_path / "e.sqlite3"))
    weaviate = Engine(store=_weaviate(weaviate_server, prefix), embedder=EMBEDDER, classifier=KeywordClassifier(),
                      ledger=SqliteLedger(tmp_path / "w.sqlite3"))
    try:
        yield embedded, weaviate
    finally:
        embedded.close()
        weaviate.close()
        weaviate_server.drop_collections(prefix)


def _trace_counts(result: RecallResult) -> tuple[object, ...]:
    trace = result.trace
    return (trace.mode, trace.legs, trace.vector_candidates, trace.lexical_candidates, trace.fused_candidates,
            trace.dropped_below_floor, trace.excluded_current_session, trace.window_turns)


def test_recall_traces_count_the_same_on_both_backends(engines: tuple[Engine, Engine]) -> None:
    for engine in engines:
        for day, (session, texts, closed) in enumerate(CONVERSATION):
            at = T0 + timedelta(days=10 * day)
            _say(engine, session, texts, at)
            if closed:
                engine.close_session(session, closed_at=at + timedelta(hours=1))
    at = T0 + timedelta(days=40)
    for message, session, window in RECALLS:
        for include_current in (False, True):
            query = RecallQuery(character_id="ava", user_id="tester", message=message, session_id=session,
                                at=at, include_current_session=include_current,
                                window=tuple(WindowTurn(role="user", text=line) for line in window) or None)
            embedded, weaviate = (engine.recall(query) for engine in engines)
            what = f"{message!r} in {session} (current session included: {include_current})"
            assert _trace_counts(weaviate) == _trace_counts(embedded), what
            assert weaviate.trace.vector_threshold == pytest.approx(embedded.trace.vector_threshold, abs=1e-5), what
            assert weaviate.trace.fused_floor == pytest.approx(embedded.trace.fused_floor, abs=1e-5), what
            assert [m.memory_id for m in weaviate.memories] == [m.memory_id for m in embedded.memories], what
    # The open session's memories are what recall leaves out of its own turns' answers.
    excluded = engines[1].recall(RecallQuery(character_id="ava", user_id="tester", message="the river in Lisbon",
                                             session_id="c4", at=at)).trace.excluded_current_session
    assert excluded == 2
