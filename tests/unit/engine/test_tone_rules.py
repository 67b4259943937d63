"""Tone rules a tester would agree with: trivia decays out of force, a loss stands; a settled worry stops
carrying its anxiety (and a director can undo that), a grief never does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import NotFound
from engine.domain.models import Partition, RecallQuery, RecallResult, Turn, partition_key
from engine.domain.tuning import ProfileSource, ToneParams, TuningProfile
from engine.service import Engine
from tests.fakes import KeywordClassifier

T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
PARTITION = Partition(character_id="ava", user_id="u1")
TRIVIA = [("user", "I'm so sad, our beach day got rained off."), ("character", "Oh no! Another weekend, maybe?")]
LUNA = [("user", "My dog Luna died last week."), ("character", "I'm so sorry."),
        ("user", "Luna and I walked in the park every morning.")]
WORRY_1 = [("user", "I'm worried about the scan on Friday."), ("character", "That sounds stressful."),
           ("user", "The scan is for my lungs and I'm worried sick.")]
WORRY_2 = [("user", "Still worried, no word about the scan."), ("character", "Waiting is hard."),
           ("user", "Worried the scan shows something bad.")]
NEWS = [("user", "Great news: the scan came back clear, such a relief!"), ("character", "Wonderful!"),
        ("user", "Thanks for listening to me all month.")]


def say(engine: Engine, session: str, lines: list[tuple[str, str]], *, days: float) -> None:
    start = T0 + timedelta(days=days)
    engine.ingest([Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id="u1",
                        role=role, text=text, timestamp=start + timedelta(seconds=30 * i))  # type: ignore[arg-type]
                   for i, (role, text) in enumerate(lines)])
    engine.close_session(session, closed_at=start + timedelta(minutes=5))


def recall(engine: Engine, message: str, *, days: float) -> RecallResult:
    return engine.recall(RecallQuery(character_id="ava", user_id="u1", message=message, session_id="probe",
                                     at=T0 + timedelta(days=days)))


def registers(result: RecallResult) -> set[str]:
    return {c.register for c in result.tone_in_force}


def open_engine(path: Path, profiles: ProfileSource | None = None) -> Engine:
    embedder = HashingEmbedder()
    store = EmbeddedStore(path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    return Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), profiles=profiles,
                  ledger=SqliteLedger(path / "ledger.sqlite3"))


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    opened = open_engine(tmp_path)
    yield opened
    opened.close()


# -- the standing bar -------------------------------------------------------------------------------------------


def test_a_minor_disappointment_decays_out_of_force_while_a_loss_stands(engine: Engine) -> None:
    say(engine, "s1", TRIVIA, days=0)
    say(engine, "s2", LUNA, days=30)
    a_week_later = recall(engine, "Thinking about the beach again.", days=7)
    assert "sadness" in registers(a_week_later)  # fresh, the letdown carries a tone constraint
    result = recall(engine, "What should I cook tonight?", days=400)
    assert [(r.register, r.standing) for r in result.standing_rules] == [("grief", True)]
    assert "Luna" in result.standing_rules[0].anchors
    assert "rained off" not in result.context.system
    # Decayed out of force, the letdown is an ordinary memory again: recalled, no tone.
    beach = recall(engine, "Our beach day got rained off again, remember?", days=400)
    assert any("beach" in m.text for m in beach.memories) and "sadness" not in registers(beach)


def test_without_the_standing_bar_the_trivia_would_stand(tmp_path: Path) -> None:
    """What the bar changed: with it at the tone bar and sadness a loss, the beach day stands for good."""
    lax = ToneParams(standing_min_intensity=ToneParams().min_intensity, loss_registers=("grief", "sadness"))
    opened = open_engine(tmp_path, ProfileSource(default=TuningProfile(tone=lax)))
    try:
        say(opened, "s1", TRIVIA, days=0)
        assert registers(recall(opened, "What should I cook tonight?", days=400)) == {"sadness"}
    finally:
        opened.close()


def test_anxiety_and_anger_never_stand() -> None:
    profile = TuningProfile()
    from engine.recall import standing_bar

    assert standing_bar(profile, "anxiety") == standing_bar(profile, "anger") == float("inf")
    assert standing_bar(profile, "grief") == profile.tone.min_intensity
    assert standing_bar(profile, "sadness") == profile.tone.standing_min_intensity
    # A standing bar below the tone bar counts as the tone bar (a saved profile must keep loading).
    assert standing_bar(TuningProfile(tone=ToneParams(min_intensity=0.9)), "sadness") == 0.9


# -- resolution -------------------------------------------------------------------------------------------------


def worry_then_news(engine: Engine) -> None:
    say(engine, "s1", WORRY_1, days=0)
    say(engine, "s2", WORRY_2, days=7)
    say(engine, "s3", NEWS, days=14)


def test_weeks_of_worry_resolved_by_a_later_all_clear(engine: Engine) -> None:
    say(engine, "s1", WORRY_1, days=0)
    say(engine, "s2", WORRY_2, days=7)
    assert "anxiety" in registers(recall(engine, "Any news about the scan?", days=13))
    say(engine, "s3", NEWS, days=14)

    after = recall(engine, "The scan follow-up is next week.", days=21)
    assert "anxiety" not in registers(after)
    scans = [m for m in after.memories if "worried" in m.text.lower()]
    assert scans, "the worried memories are still recalled as memories"
    news = engine.store.session_memories("s3")[0]
    for memory in scans:
        assert memory.resolution is not None and memory.resolution.resolved_by == news.memory_id
        assert memory.resolution.note == (f"resolved by {news.memory_id} on {(T0 + timedelta(days=14)).date()}: "
                                          "the result came back fine (rule)")
    assert {r.memory_id for r in after.resolutions} == {m.memory_id for m in scans}
    assert after.trace.resolved_tone_memories == 4
    # The resolving memory's trace says what it resolved; the ledger says who, when and why.
    trace = engine.store.get_traces([news.memory_id])[news.memory_id]
    worried = {m.memory_id for s in ("s1", "s2") for m in engine.store.session_memories(s)}
    assert trace.resolution_cue == "the result came back fine (rule)" and set(trace.resolves) == worried
    assert trace.register == "joy"  # the news keeps its own feeling: the episode it settles does not colour it
    listed = engine.resolutions(PARTITION)
    assert {r.memory_id for r in listed} == worried and {r.link for r in listed} <= {
        "shared anchor", "same episode (shared anchor)"}
    events = [e.event for e in engine.ledger.partition_history(partition_key("ava", "u1"))]
    assert events.count("resolved") == 4
    # A recall dated before the news still carries the worry.
    assert "anxiety" in registers(recall(engine, "Any news about the scan?", days=13))


def test_worry_and_good_news_in_one_session(engine: Engine) -> None:
    say(engine, "s1", [*WORRY_1, ("character", "Let me know."), NEWS[0]], days=0)
    assert "anxiety" not in registers(recall(engine, "About the scan...", days=3))
    assert len(engine.resolutions(PARTITION)) == 2


def test_a_grief_is_not_resolved_by_later_happy_news_about_the_same_anchor(engine: Engine) -> None:
    say(engine, "s1", LUNA, days=0)
    say(engine, "s2", [("user", "Luna's photo album came back from the printers and it all worked out, "
                                "such a relief!")], days=20)
    happy = engine.store.session_memories("s2")[0]
    assert engine.store.get_traces([happy.memory_id])[happy.memory_id].resolution_cue  # it reads as resolution
    assert engine.resolutions(PARTITION) == []  # ...but grief is not resolvable
    assert "grief" in registers(recall(engine, "I walked Luna's route in the park this morning.", days=25))
    assert "grief" in registers(recall(engine, "Maybe a puppy this spring?", days=400))


def test_a_director_undoes_a_resolution_and_the_tone_is_back(engine: Engine) -> None:
    worry_then_news(engine)
    first = engine.store.session_memories("s2")[0]
    undone = engine.undo_resolution(first.memory_id, PARTITION, actor="director:k1")
    # The whole episode the same memory resolved (session s2) is back; s1's stays resolved.
    assert {u.memory_id for u in undone} == {m.memory_id for m in engine.store.session_memories("s2")}
    assert all(u.undone_by == "director:k1" and u.undone_at is not None for u in undone)
    after = recall(engine, "Still thinking about the scan.", days=21)
    assert "anxiety" in registers(after)
    in_force = {r.memory_id for r in engine.resolutions(PARTITION, include_undone=False)}
    assert in_force == {m.memory_id for m in engine.store.session_memories("s1")}
    history = engine.ledger.history(first.memory_id)
    assert [e.event for e in history][-1] == "resolution_undone" and history[-1].actor == "director:k1"
    with pytest.raises(NotFound):
        engine.undo_resolution(first.memory_id, PARTITION, actor="director:k1")  # undone already
    with pytest.raises(NotFound):
        engine.undo_resolution(first.memory_id, Partition(character_id="ava", user_id="someone-else"),
                               actor="director:k1")


def test_a_retried_write_does_not_resolve_again_what_a_director_undid(engine: Engine) -> None:
    worry_then_news(engine)
    resolved = engine.resolutions(PARTITION)
    engine.ledger.undo_resolutions(partition_key("ava", "u1"), [r.memory_id for r in resolved], by="director:k1",
                                   at=T0 + timedelta(days=15))
    assert engine.ledger.record_resolutions(partition_key("ava", "u1"), resolved) == []
    assert engine.resolutions(PARTITION, include_undone=False) == []


def test_resolutions_survive_a_restart(tmp_path: Path) -> None:
    first = open_engine(tmp_path)
    worry_then_news(first)
    news = first.store.session_memories("s3")[0]
    resolves = first.store.get_traces([news.memory_id])[news.memory_id].resolves
    first.close()
    second = open_engine(tmp_path)
    try:
        assert second.store.get_traces([news.memory_id])[news.memory_id].resolves == resolves
        assert len(second.resolutions(PARTITION)) == 4
        assert "anxiety" not in registers(recall(second, "The scan follow-up is next week.", days=21))
    finally:
        second.close()


def test_erasing_the_resolving_memory_puts_the_tone_back(engine: Engine) -> None:
    worry_then_news(engine)
    news = engine.store.session_memories("s3")[0]
    engine.forget(news.memory_id, PARTITION)
    assert engine.resolutions(PARTITION) == []
    assert "anxiety" in registers(recall(engine, "The scan follow-up is next week.", days=21))


def test_erasing_the_user_erases_their_resolutions(engine: Engine) -> None:
    worry_then_news(engine)
    engine.erase_user("ava", "u1", actor="runtime:k1")
    assert engine.resolutions(PARTITION) == []
