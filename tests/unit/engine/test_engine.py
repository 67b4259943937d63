"""Engine behaviour users rely on: idempotent ingest, the write-time pass, pending traces, degraded recall."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import MemoryKind, RecallQuery, TraceStatus
from engine.service import Engine
from tests.fakes import BrokenClassifier, BrokenEmbedder, KeywordClassifier
from tests.sessions import LUNA_LONG as LUNA
from tests.sessions import T0
from tests.sessions import make_turns as turns


def recall(engine: Engine, message: str, *, days: float, session: str = "later", user: str = "u1"):  # type: ignore[no-untyped-def]
    return engine.recall(RecallQuery(character_id="ava", user_id=user, message=message, session_id=session,
                                     at=T0 + timedelta(days=days)))


def test_ingest_is_idempotent_and_makes_a_memory_per_user_turn(hashing_engine: Engine) -> None:
    first = hashing_engine.ingest(turns("s1", LUNA))
    again = hashing_engine.ingest(turns("s1", LUNA))
    assert (first.stored, first.duplicates, first.memories) == (5, 0, 3)
    assert (again.stored, again.duplicates, again.memories) == (0, 5, 0)
    memories = hashing_engine.store.session_memories("s1")
    assert [m.context for m in memories] == ["", LUNA[1][1], LUNA[3][1]]


def test_a_session_cannot_change_hands(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA[:1]))
    with pytest.raises(InvalidInput, match="another character or user"):
        hashing_engine.ingest(turns("s1", LUNA[2:3], user="someone-else"))


def test_closing_writes_a_trace_beside_every_memory(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA))
    report = hashing_engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    assert (report.traces_written, report.traces_pending) == (3, 0)
    memories = hashing_engine.store.session_memories("s1")
    traces = hashing_engine.store.get_traces([m.memory_id for m in memories])
    for memory in memories:
        trace = traces[memory.memory_id]
        assert trace.status is TraceStatus.COMPLETE
        assert "Luna" in trace.anchors  # even "I just miss her so much": the pronoun resolves to Luna
        assert trace.kind is MemoryKind.EMOTIONAL
        assert trace.register in {"grief", "sadness"} and trace.valence < 0
        assert 0.0 <= trace.engagement <= 1.0
        assert trace.classifier == "keyword-fake@1"


def test_closing_an_unknown_session_is_not_found(hashing_engine: Engine) -> None:
    with pytest.raises(NotFound):
        hashing_engine.close_session("nope")


def test_a_failing_classifier_loses_nothing_and_is_retried(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    broken = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=BrokenClassifier())
    broken.ingest(turns("s1", LUNA))
    report = broken.close_session("s1")
    assert (report.traces_written, report.traces_pending) == (0, 3)
    memories = store.session_memories("s1")
    pending = store.get_traces([m.memory_id for m in memories])
    assert {t.status for t in pending.values()} == {TraceStatus.PENDING}
    assert all("classifier unreachable" in t.last_error for t in pending.values())
    assert len(memories) == 3 and store.pending_sessions() == ["s1"]

    healed = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=KeywordClassifier())
    assert healed.retry_pending() == 3
    assert store.pending_sessions() == []
    assert {t.status for t in store.get_traces([m.memory_id for m in memories]).values()} == {TraceStatus.COMPLETE}
    healed.close()


def test_a_turn_arriving_after_close_gets_its_trace_on_retry(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA[:3]))
    hashing_engine.close_session("s1")
    hashing_engine.ingest(turns("s1", LUNA)[3:])
    assert hashing_engine.store.pending_sessions() == ["s1"]
    assert hashing_engine.retry_pending() == 3
    assert hashing_engine.store.pending_sessions() == []


def test_luna_is_recalled_with_a_tone_constraint_nine_days_later(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA))
    hashing_engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    result = recall(hashing_engine, "I went for a walk in the park this morning.", days=9)
    assert any("Luna" in m.text for m in result.memories)
    top = result.memories[0]
    assert top.matched_anchors == ("park",) and top.components.anchor_boost > 1
    grief = [c for c in result.tone_constraints if c.register == "grief"]
    assert grief and "Luna" in grief[0].anchors and not grief[0].standing
    assert "Luna" in result.context.system and "cheerful" in result.context.system
    assert "nine days ago" in result.context.tail.lower()


def test_a_year_later_the_grief_is_a_standing_rule_not_a_memory(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA))
    hashing_engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    result = recall(hashing_engine, "Luna would have loved this park.", days=365)
    # The moments decayed out of the context slots (the fact "The user's dog is called Luna." may stay)...
    assert not any("Luna" in m.text for m in result.memories if m.kind == "turn")
    rules = [c for c in result.standing_rules if c.register == "grief"]
    assert rules and "Luna" in rules[0].anchors and rules[0].standing  # ...but the care stays in force
    assert "Standing rule" in result.context.system


def test_recall_leaves_out_the_current_session_unless_asked(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA))
    inside = recall(hashing_engine, "Luna park", days=0.01, session="s1")
    assert inside.memories == () and inside.trace.excluded_current_session == 3
    everything = hashing_engine.recall(RecallQuery(character_id="ava", user_id="u1", message="Luna park",
                                                   session_id="s1", include_current_session=True,
                                                   at=T0 + timedelta(days=0.01)))
    assert everything.memories


def test_recall_says_when_it_answered_without_the_embedder(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    Engine(ledger=SqliteLedger.in_memory(),
           store=store, embedder=embedder, classifier=KeywordClassifier()).ingest(turns("s1", LUNA))
    degraded = Engine(ledger=SqliteLedger.in_memory(),
                      store=store, embedder=BrokenEmbedder(embedder.dimension), classifier=KeywordClassifier())
    lexical = recall(degraded, "the park", days=1)
    assert lexical.trace.mode == "lexical" and lexical.memories
    assert any("embedder failed" in note for note in lexical.trace.notes)
    substring = recall(degraded, "fourte", days=1)  # no whole word matches; a substring does
    assert substring.trace.mode == "substring"
    assert substring.memories and "fourteen" in substring.memories[0].text
    store.close()


def test_every_ranking_is_explained_by_its_components(hashing_engine: Engine) -> None:
    hashing_engine.ingest(turns("s1", LUNA))
    hashing_engine.close_session("s1")
    for memory in recall(hashing_engine, "walk in the park with Luna", days=3).memories:
        c = memory.components
        assert c.score == pytest.approx(c.relevance * c.salience_weight * c.anchor_boost * c.strength
                                        * c.scope_weight)


def test_an_embedder_outage_at_ingest_loses_no_turn(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    down = Engine(ledger=SqliteLedger.in_memory(),
                  store=store, embedder=BrokenEmbedder(embedder.dimension), classifier=KeywordClassifier())
    report = down.ingest(turns("s1", LUNA))
    assert (report.stored, report.memories, report.awaiting_embedding) == (5, 3, 3)
    assert down.background_pass() == {"vectors": 0, "traces": 0, "usage": 0}  # still down: nothing done, nothing raised
    found = recall(down, "walked in the park", days=1)
    assert found.trace.mode == "lexical" and any("park" in m.text for m in found.memories)

    up = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=KeywordClassifier())
    assert up.close_session("s1").traces_written == 3  # the write-time pass embeds what it needs first
    assert up.backfill_vectors() == 0 and store.unembedded(10) == []
    healed = recall(up, "walked in the park", days=1)
    assert healed.trace.mode == "hybrid" and "vector" in [leg.value for leg in healed.memories[0].legs]
    store.close()


class _IngestsWhileClassifying(KeywordClassifier):
    """A classifier during whose first call another request stores a late turn of the session being closed."""

    def __init__(self) -> None:
        super().__init__()
        self.engine: Engine | None = None
        self.late_ingest_finished = False

    def classify(self, texts, embeddings):  # type: ignore[no-untyped-def]
        if self.calls == 0 and self.engine is not None:
            engine = self.engine
            late = threading.Thread(target=lambda: engine.ingest(turns("s1", LUNA)[3:]))
            late.start()
            late.join(timeout=30)
            self.late_ingest_finished = not late.is_alive()
        return super().classify(texts, embeddings)


def test_a_close_does_not_hold_up_ingest_while_it_classifies_and_writes_what_arrived_meanwhile(
    tmp_path: Path,
) -> None:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path, embedding_model=embedder.model_id, dimension=embedder.dimension)
    classifier = _IngestsWhileClassifying()
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=classifier)
    classifier.engine = engine
    engine.ingest(turns("s1", LUNA[:3]))
    report = engine.close_session("s1", closed_at=T0 + timedelta(minutes=5))
    assert classifier.late_ingest_finished  # the ingest ran while the close was classifying, not after it
    memories = store.session_memories("s1")
    assert len(memories) == 3 and report.traces_written == 3  # the late user turn too: built again with it
    assert {t.status for t in store.get_traces([m.memory_id for m in memories]).values()} == {TraceStatus.COMPLETE}
    assert store.pending_sessions() == []
    engine.close()
