"""Stage one's one ranking (scoring.fusion): BM25 against its slow reference, the adaptive floors, seed 000's
protections, and the tiers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.domain.models import Memory, MemoryKind, Partition, Trace, TraceStatus
from engine.domain.ports import SearchRequest
from engine.domain.text import terms
from engine.domain.tuning import RetrievalParams
from engine.retrieval import stage_one_params
from scoring.fusion import TIER_HIGH, TIER_LOW, bm25_normalised, stage_one
from scoring.reference import bm25_reference

T0 = datetime(2025, 3, 1, tzinfo=UTC)
PARTITION = Partition(character_id="ava", user_id="u1")
WORDS = ("luna park walk dog rain coffee interview nervous tomorrow sister birthday cake train late work boss "
         "beach film pasta basil garden roses moving flat leeds").split()


def _rank(cosine: list[float], lexical: list[float], params: RetrievalParams | None = None):  # type: ignore[no-untyped-def]
    n = len(cosine)
    return stage_one(np.array(cosine, dtype=np.float64), np.array(lexical, dtype=np.float64), np.ones(n, dtype=bool),
                     stage_one_params(params or RetrievalParams()), have_vector=True)


@pytest.mark.parametrize("seed", range(5))
def test_the_stores_bm25_matches_the_slow_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    memories = [
        Memory(memory_id=f"m{i}", turn_id=f"t{i}", session_id=f"s{i % 3}", character_id="ava", user_id="u1",
               text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))),
               created_at=T0 + timedelta(minutes=i))
        for i in range(60)
    ]
    store.add_memories(memories, embedder.embed([m.text for m in memories]))
    # Fact sentences join a memory's document, also for memories indexed long before (out of posting order).
    facts = {i: f"The user's {rng.choice(WORDS)} is {rng.choice(WORDS)} {rng.choice(WORDS)}." for i in (3, 17, 41)}
    store.put_traces([
        Trace(memory_id=f"m{i}", status=TraceStatus.COMPLETE, kind=MemoryKind.FACTUAL, register="neutral",
              valence=0.0, intensity=0.1, anchors=(), facts=(sentence,), classifier="test", written_at=T0)
        for i, sentence in facts.items()
    ])
    documents = [terms(m.text) + (terms(facts[i]) if i in facts else []) for i, m in enumerate(memories)]
    query_terms = list(dict.fromkeys(terms(" ".join(rng.choice(WORDS) for _ in range(4)) + " unheardofword")))
    weights = np.array([1.0 if j % 2 == 0 else 0.3 for j in range(len(query_terms))])
    params = RetrievalParams(bm25_k1=rng.choice([0.9, 1.2, 2.0]), bm25_b=rng.choice([0.3, 0.75, 1.0]))

    legs = store.search(SearchRequest(partition=PARTITION, query_vector=None, query_terms=query_terms, params=params,
                                      exclude_session=None, created_before=T0 + timedelta(days=1)))
    fast = bm25_normalised(legs.term_frequency, legs.doc_length, legs.document_frequency, weights,
                           documents=legs.documents, average_doc_length=legs.average_doc_length,
                           k1=params.bm25_k1, b=params.bm25_b)
    slow = bm25_reference(documents, dict(zip(query_terms, weights.tolist(), strict=True)),
                          k1=params.bm25_k1, b=params.bm25_b)
    by_id = dict(zip(legs.memory_ids, fast.tolist(), strict=True))
    for memory, expected in zip(memories, slow, strict=True):
        assert by_id.get(memory.memory_id, 0.0) == pytest.approx(expected, abs=1e-9)
    assert all(slow[int(m[1:])] > 0 for m in legs.memory_ids)  # without a vector, the pool is the lexical matches


def test_a_partition_where_every_match_is_weak_still_returns_its_best() -> None:
    # The vector threshold is 0.2, but every cosine is below it: the best (within the margin) still enter.
    found = _rank([0.15, 0.12, 0.02, -0.05], [0.0, 0.0, 0.0, 0.0])
    assert found.rows.tolist() == [0, 1]
    assert found.vector_threshold == pytest.approx(0.05)
    assert (found.tier[found.rows] != TIER_HIGH).all()  # the best there is, not a strong match
    assert found.tier[1] == TIER_LOW


def test_a_strong_match_is_not_padded_with_noise() -> None:
    found = _rank([0.75, 0.22, 0.21, 0.05], [0.6, 0.0, 0.0, 0.0])
    assert found.rows.tolist() == [0]  # above the absolute threshold, but far below the best
    assert found.tier[0] == TIER_HIGH
    assert found.dropped_below_floor == 2


def test_a_keyword_stuffed_note_cannot_outrank_a_real_semantic_match() -> None:
    # Row 0 repeats the query's words (lexical 1.0) with a cosine the relative threshold admits but the absolute
    # one does not; row 1 means what the query means and shares none of its words.
    params = RetrievalParams()
    found = _rank([0.12, 0.55], [1.0, 0.0], params)
    assert found.rows.tolist()[0] == 1
    vector_share = params.vector_weight * 0.12 / params.vector_full_similarity
    assert found.relevance[0] <= params.lexical_only_cap + vector_share + 1e-12


def test_a_lexical_only_hit_enters_capped() -> None:
    params = RetrievalParams()
    found = stage_one(np.array([np.nan, 0.5]), np.array([1.0, 0.0]), np.ones(2, dtype=bool),
                      stage_one_params(params), have_vector=True)
    assert found.lexical_hit[0] and not found.vector_hit[0]
    assert found.relevance[0] == pytest.approx(params.lexical_only_cap)


def test_without_a_query_vector_the_lexical_leg_answers_uncapped() -> None:
    found = stage_one(np.array([np.nan, np.nan]), np.array([0.9, 0.5]), np.ones(2, dtype=bool),
                      stage_one_params(RetrievalParams()), have_vector=False)
    assert found.rows.tolist() == [0, 1]
    assert found.relevance[0] == pytest.approx(0.9)


def test_tiers_read_the_calibrated_relevance_and_a_match_that_stands_out_counts_more() -> None:
    params = RetrievalParams(fused_relative_floor=0.0)
    found = _rank([0.8, 0.5, 0.3, 0.25], [0.0, 0.0, 0.0, 0.0], params)
    p = found.calibrated
    assert p[0] > p[1] > p[2] > p[3]
    for row in range(4):
        expected = 2 if p[row] >= params.tier_high else 0 if p[row] < params.tier_low else 1
        assert int(found.tier[row]) == expected
    # The same fused relevance, once among equals and once standing above the rest.
    among_equals = _rank([0.4, 0.4, 0.4, 0.4], [0.0] * 4, params)
    standing_out = _rank([0.4, 0.2, 0.2, 0.2], [0.0] * 4, params)
    assert among_equals.relevance[0] == pytest.approx(standing_out.relevance[0])
    assert standing_out.calibrated[0] > among_equals.calibrated[0]
    with pytest.raises(ValueError, match="tier_low"):
        RetrievalParams(tier_high=0.2, tier_low=0.3)


def test_ties_keep_the_pool_order() -> None:
    found = _rank([0.5, 0.5, 0.5], [0.0, 0.0, 0.0])
    assert found.rows.tolist() == [0, 1, 2]
