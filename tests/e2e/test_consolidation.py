"""Consolidation as a deployment runs it, one transcript per mechanism (``tests/e2e/lifecycle_transcripts``): the
gate, rehearsal, earned trust and conflict tickets. Each transcript is replayed as FORMAT.md says, with what a
deployment adds between sessions: the nightly sweep, run after each session's last turn, and a reviewer (this test)
deciding what it filed. The probes check what the character is told; the test then checks the queue and that each
decision is undone exactly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import ExtractedFact, MemoryState, Partition, RecallQuery, RecallResult, ReviewItem, Turn
from engine.domain.scopes import partition_for
from engine.domain.tuning import ProfileSource, TuningProfile
from engine.service import Engine
from engine.strength import strength_params
from engine.transcripts.format import parse_transcript
from engine.transcripts.replay import ProbeResult, replay
from scoring import strength as strength_kernel
from tests.fakes import KeywordClassifier

HERE = Path(__file__).parent / "lifecycle_transcripts"
EMBEDDER = HashingEmbedder()
REVIEWER = "director:test"


@dataclass
class Clock:
    now: datetime = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Nightly:
    """The engine as ``replay`` drives it, plus what a deployment does between sessions: the nightly sweep one
    hour after a session's last turn, then ``review(session index)``."""

    engine: Engine
    clock: Clock
    review: Callable[[int], None] = lambda index: None
    closed: int = 0
    last_turn: datetime | None = None
    sweeps: list[object] = field(default_factory=list)

    def ingest(self, turns: Sequence[Turn]) -> object:
        self.last_turn = max(t.timestamp for t in turns)
        self.clock.now = self.last_turn
        return self.engine.ingest(turns)

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> object:
        report = self.engine.close_session(session_id, closed_at=closed_at)
        assert self.last_turn is not None
        self.clock.now = min(self.last_turn + timedelta(hours=1), closed_at or self.last_turn + timedelta(hours=1))
        self.sweeps.append(self.engine.sweep())
        self.review(self.closed)
        self.closed += 1
        return report

    def recall(self, query: RecallQuery) -> RecallResult:
        return self.engine.recall(query)

    def close(self) -> None:
        self.engine.close()


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Callable[..., Nightly]]:
    made: list[Nightly] = []

    def make(profile: TuningProfile | None = None) -> Nightly:
        clock = Clock()
        profiles = ProfileSource({"ava": profile}) if profile is not None else None
        engine = Engine(store=EmbeddedStore(tmp_path / f"data{len(made)}", embedding_model=EMBEDDER.model_id,
                                            dimension=EMBEDDER.dimension),
                        embedder=EMBEDDER, classifier=KeywordClassifier(), profiles=profiles,
                        ledger=SqliteLedger(tmp_path / f"ledger{len(made)}.sqlite3"), clock=clock)
        made.append(Nightly(engine, clock))
        return made[-1]

    yield make
    for nightly in made:
        nightly.close()


def run(name: str, nightly: Nightly) -> list[ProbeResult]:
    path = HERE / f"{name}.yaml"
    results = replay(parse_transcript(path.read_text(), file=str(path)), nightly)
    failed = [f"{r.file}:{r.line}: {'; '.join(r.failures)}" for r in results if not r.passed]
    assert not failed, "\n".join(failed)
    return results


def user(nightly: Nightly, user_id: str) -> list[Partition]:
    return [partition_for("user", "ava", user_id)]


def keep_all(nightly: Nightly, partitions: list[Partition], kind: str) -> list[ReviewItem]:
    return [nightly.engine.decide(item.item_id, "kept", partitions, by=REVIEWER)
            for item in nightly.engine.review_items(partitions) if item.kind == kind]


def kept_at(nightly: Nightly, item: ReviewItem) -> datetime | None:
    return nightly.engine.ledger.item(item.item_id).decided_at


def state_of(nightly: Nightly, memory_id: str) -> MemoryState:
    return nightly.engine.states([memory_id])[memory_id]


def test_the_gate_promotes_what_keeps_coming_back_and_starts_it_at_its_score(build: Callable[..., Nightly]) -> None:
    nightly = build()
    partitions = user(nightly, "tester-gate")
    kept: list[ReviewItem] = []
    nightly.review = lambda index: kept.extend(keep_all(nightly, partitions, "promote"))
    run("consolidation-gate", nightly)

    [promoted] = kept
    facts = {f.memory_id: (f, s) for f, s in nightly.engine.list_facts("user", "ava", "tester-gate")}
    fact, state = facts[promoted.memory_id]
    assert fact.text == 'The user loves "jazz".' and state.status == "active"
    assert promoted.reason.startswith("blended score") and promoted.change_kind == "promote:opinion"
    # The score that cleared the gate is the promoted fact's base strength when it was kept.
    signals = state.signals
    usage = strength_kernel.usage_boost(np.array([signals.retrievals]), np.array([len(signals.query_kinds)]),
                                        strength_params(nightly.engine.profiles.profile_for("ava")))
    # Validated at the keep, so its decay is 1 then: its base strength is trust x confidence x usage.
    base = strength_kernel.source_trust_of(signals.source) * signals.confidence * usage
    assert signals.last_validated == kept_at(nightly, promoted)
    assert base[0] == pytest.approx(promoted.score, abs=1e-5)
    # Said once and never recalled: still provisional, never proposed.
    reading = [s for f, s in facts.values() if "reading books" in f.text]
    assert [s.status for s in reading] == ["provisional"]

    # Reverting the kept promotion restores the exact prior state.
    nightly.engine.decide(promoted.item_id, "reverted", partitions, by=REVIEWER)
    assert state_of(nightly, promoted.memory_id) == promoted.before


def test_rehearsal_checks_once_a_session_confirms_up_a_box_and_files_a_contradiction(
        build: Callable[..., Nightly]) -> None:
    nightly = build()
    partitions = user(nightly, "tester-rehearsal")
    results = run("rehearsal-diet", nightly)

    first, second, after_confirm, last = (r.recall for r in results)
    assert first.rehearsal is not None and first.rehearsal.reason in ("diet", "allergy")
    assert first.trace.rehearsal_due == 2 and first.trace.context is not None
    assert first.trace.context.rehearsal == first.rehearsal.memory_id
    assert second.rehearsal is None and second.trace.rehearsal_note == "a check was already offered in this session"
    assert after_confirm.rehearsal is None and "cadence" in after_confirm.trace.rehearsal_note

    facts = {f.text: (f, s) for f, s in nightly.engine.list_facts("user", "ava", "tester-rehearsal")}
    vegetarian, veg_state = facts['The user\'s diet is "vegetarian".']
    vegan, vegan_state = facts['The user\'s diet is "vegan".']
    assert veg_state.rehearsal is not None and veg_state.rehearsal.box == 2  # confirmed once
    assert veg_state.rehearsal.confirmed_at is not None and veg_state.status == "active"
    assert vegan_state.status == "provisional"
    assert last.rehearsal is None

    [ticket] = [i for i in nightly.engine.review_items(partitions) if i.kind == "contradiction"]
    assert ticket.memory_id == vegan.memory_id and ticket.counterpart == vegetarian.memory_id
    assert [side.text for side in ticket.sides] == [vegan.text, vegetarian.text]
    # Kept: the new diet replaces the rehearsed one. Reverted: both back exactly as they were.
    before = nightly.engine.states([vegan.memory_id, vegetarian.memory_id])
    nightly.engine.decide(ticket.item_id, "kept", partitions, by=REVIEWER)
    states = nightly.engine.states([vegan.memory_id, vegetarian.memory_id])
    assert states[vegan.memory_id].status == "active" and states[vegetarian.memory_id].status == "revoked"
    nightly.engine.decide(ticket.item_id, "reverted", partitions, by=REVIEWER)
    assert nightly.engine.states([vegan.memory_id, vegetarian.memory_id]) == before


def test_trust_earned_by_human_keeps_auto_keeps_and_is_undone_back_into_the_queue(
        build: Callable[..., Nightly]) -> None:
    profile = TuningProfile.model_validate({
        "character_id": "ava",
        # This deployment's gate: said twice by the user themselves (stated, confidence and trust: 3 of 6).
        "consolidation": {"mode": "k_of_n", "k": 3, "bar_retrievals": 1000, "bar_query_kinds": 32,
                          "bar_confidence": 1.0, "bar_source_trust": 1.0, "bar_stated": 2, "bar_age_days": 3650},
        "trust": {"auto_keep_after": 2, "min_keep_rate": 1.0},
    })
    nightly = build(profile)
    partitions = user(nightly, "tester-trust")
    nightly.review = lambda index: keep_all(nightly, partitions, "promote") if index < 2 else None
    run("earned-trust", nightly)

    record, _ = nightly.engine.trust_record("ava", "promote:opinion")
    assert (record.kept, record.rejected, record.reverted) == (2, 0, 0)
    [auto] = nightly.engine.review_items(partitions, "auto_kept")
    assert auto.decided_by == "trust" and nightly.sweeps[2].auto_kept == 1  # type: ignore[attr-defined]
    events = [e.event for e in nightly.engine.audit_trail(partitions[0]) if e.memory_id == auto.memory_id]
    assert "promote_auto_kept" in events

    undone = nightly.engine.decide(auto.item_id, "undone", partitions, by=REVIEWER)
    assert undone.decision == "pending" and undone.decided_by is None
    assert state_of(nightly, auto.memory_id) == auto.before
    result = nightly.engine.recall(RecallQuery(character_id="ava", user_id="tester-trust", message="baking?",
                                               at=nightly.clock.now + timedelta(days=1)))
    assert 'loves "baking"' not in result.context.system
    # Neither the automatic keep nor its undoing counted; a person's keep now does.
    assert nightly.engine.trust_record("ava", "promote:opinion")[0].kept == 2
    nightly.engine.decide(auto.item_id, "kept", partitions, by=REVIEWER)
    assert nightly.engine.trust_record("ava", "promote:opinion")[0].kept == 3


def test_a_users_claim_on_canon_files_a_ticket_and_canon_holds_until_a_director_decides(
        build: Callable[..., Nightly]) -> None:
    nightly = build()
    engine = nightly.engine
    at = datetime.fromisoformat("2025-05-01T12:00:00+00:00")
    canon = engine.write_fact(ExtractedFact(subject="ava", relation="lives_in", value="Lisbon",
                                            sentence='Ava lives in "Lisbon".'), scope="canon", character_id="ava",
                              user_id=None, writer="author", source="director", at=at)
    director = [partition_for("canon", "ava")]
    claims: list[str] = []

    def review(index: int) -> None:
        if index == 0:  # the runtime relays the user's claim before the next session
            claims.append(engine.write_fact(
                ExtractedFact(subject="ava", relation="lives_in", value="Porto", sentence="You live in Porto."),
                scope="user", character_id="ava", user_id="tester-conflict", writer="user", source="user_stated",
                at=nightly.clock.now).fact_id)
        if index == 1:
            [ticket] = engine.review_items(director)
            engine.decide(ticket.item_id, "kept", director, by=REVIEWER)

    nightly.review = review
    run("conflict-canon", nightly)

    [ticket] = engine.review_items(director, "kept")
    assert ticket.kind == "conflict" and ticket.memory_id == claims[0] and ticket.counterpart == canon.fact_id
    assert [s.scope for s in ticket.sides] == ["user", "canon"]
    assert "Porto" in ticket.sides[0].text and "Lisbon" in ticket.sides[1].text
    # The user's own partition is not where it is decided: their key sees no ticket, and cannot decide it.
    assert engine.review_items(user(nightly, "tester-conflict")) == []
    # Reverted: canon speaks again, and the user's fact is exactly as it was before the decision.
    engine.decide(ticket.item_id, "reverted", director, by=REVIEWER)
    assert state_of(nightly, claims[0]) == ticket.before
    result = engine.recall(RecallQuery(character_id="ava", user_id="tester-conflict", message="where do you live?",
                                       at=nightly.clock.now + timedelta(days=1)))
    assert '"Lisbon"' in result.context.system and '"Porto"' not in result.context.system
    # Erasing the user removes their ticket from the canon's queue too.
    engine.erase_user("ava", "tester-conflict", strict=False, actor="runtime:test")
    assert engine.review_items(director, None) == []
