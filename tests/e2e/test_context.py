"""Context assembly end to end: two paths, a byte-stable prefix, budgets in real tokens, whole canon records,
and a recall log that answers "what did the character see on that turn"."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from engine.domain.models import ExtractedFact, Partition, RecallQuery, Turn
from engine.domain.scopes import partition_for
from engine.domain.tuning import ContextParams, TuningProfile
from engine.service import Engine
from prompts.tokens import default_counter

T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
LUNA = ["My dog Luna died last week.", "Luna and I walked in the park every morning.", "I just miss her so much."]
CHATTER = [f"Today I tried a new recipe with {food} and it went fine." for food in
           ("lentils", "tofu", "salmon", "leeks", "chickpeas", "mushrooms", "barley", "squash")]


def say(engine: Engine, session: str, texts: list[str], at: datetime) -> None:
    engine.ingest([Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id="u1", role="user",
                        text=text, timestamp=at + timedelta(minutes=i)) for i, text in enumerate(texts)])
    engine.close_session(session, closed_at=at + timedelta(hours=1))


def recall(engine: Engine, message: str, at: datetime) -> object:
    return engine.recall(RecallQuery(character_id="ava", user_id="u1", message=message, at=at))


def canon(engine: Engine, sentence: str, relation: str, value: str) -> None:
    engine.write_fact(ExtractedFact(subject="ava", relation=relation, value=value, sentence=sentence),
                      scope="canon", character_id="ava", user_id=None, writer="author", source="director", at=T0)


@pytest.fixture
def engine(hashing_engine: Engine) -> Engine:
    canon(hashing_engine, "Ava grew up in Galway and still misses the sea.", "home_town", "Galway")
    say(hashing_engine, "s1", LUNA, T0)
    say(hashing_engine, "s2", ["I'm allergic to peanuts.", "I live in Leeds."], T0 + timedelta(days=1))
    say(hashing_engine, "s3", CHATTER, T0 + timedelta(days=2))
    return hashing_engine


def test_the_prefix_is_byte_identical_across_turns_until_path_a_changes(engine: Engine) -> None:
    first = recall(engine, "I went for a walk in the park this morning.", T0 + timedelta(days=9))
    second = recall(engine, "What should I cook tonight?", T0 + timedelta(days=9, hours=3))
    assert first.context.prefix == second.context.prefix != ""  # type: ignore[attr-defined]
    assert first.context.tail != second.context.tail  # type: ignore[attr-defined]
    prefix = first.context.prefix  # type: ignore[attr-defined]
    assert "Ava grew up in Galway" in prefix and 'allergic to "peanut"' in prefix
    assert "walk in the park" not in prefix  # semantic results never enter the prefix

    # A new fact changes it...
    say(engine, "s4", ["I moved to Lisbon last month."], T0 + timedelta(days=9, hours=4))
    third = recall(engine, "What should I cook tonight?", T0 + timedelta(days=9, hours=5))
    assert third.context.prefix != prefix and "Lisbon" in third.context.prefix  # type: ignore[attr-defined]
    assert 'lives in "Leeds"' not in third.context.prefix  # type: ignore[attr-defined]
    # ...and so does a pin.
    grief = engine.store.session_memories("s1")[0]
    canon_memory = engine.store.list_facts(partition_for("canon", "ava"))[0]
    engine.pin(canon_memory.memory_id, [partition_for("canon", "ava")], pinned=True, actor="director:test")
    fourth = recall(engine, "What should I cook tonight?", T0 + timedelta(days=9, hours=6))
    assert fourth.context.prefix == third.context.prefix  # type: ignore[attr-defined]  # already canon: same text
    engine.write_fact(ExtractedFact(subject="ava", relation="job", value="baker", sentence="Ava bakes bread."),
                      scope="canon", character_id="ava", user_id=None, writer="author", source="director",
                      at=T0 + timedelta(days=9, hours=6))
    fifth = recall(engine, "What should I cook tonight?", T0 + timedelta(days=9, hours=7))
    assert fifth.context.prefix != fourth.context.prefix and "Ava bakes bread." in fifth.context.prefix  # type: ignore[attr-defined]
    assert grief.memory_id  # the grief memory exists; its rule is standing once it decays


def test_budgets_are_honoured_exactly_and_the_lowest_ranked_memory_drops_first(engine: Engine) -> None:
    counter = default_counter()
    roomy = recall(engine, "a new recipe tonight", T0 + timedelta(days=3))
    needed = roomy.trace.context  # type: ignore[attr-defined]
    assert len(needed.memories) >= 4
    # Just enough room for the prefix, the tone and two fewer memories than before.
    budget = needed.prefix_tokens + needed.tone_tokens + needed.tail_tokens - 1
    engine.profiles.set(TuningProfile(character_id="ava", context=ContextParams(budget_tokens=budget)))
    tight = recall(engine, "a new recipe tonight", T0 + timedelta(days=3))
    trace = tight.trace.context  # type: ignore[attr-defined]
    context = tight.context  # type: ignore[attr-defined]
    assert trace.prefix_tokens == counter.count(context.prefix) and trace.tail_tokens == counter.count(context.tail)
    assert trace.tone_tokens == counter.count(context.tone)
    assert trace.prefix_tokens + trace.tone_tokens + trace.tail_tokens <= budget
    assert trace.memories == needed.memories[: len(trace.memories)]  # whole memories, in rank order...
    assert trace.memories_dropped[0] == needed.memories[-1]  # ...the lowest-ranked dropped first
    shown = {m.memory_id: m.text for m in tight.memories}  # type: ignore[attr-defined]
    for memory_id in trace.memories:
        assert shown[memory_id][:40] in context.tail
    for memory_id in trace.memories_dropped:
        assert shown[memory_id][:40] not in context.tail
    assert trace.prefix_sha256 == hashlib.sha256(context.prefix.encode()).hexdigest()


def test_an_oversized_pin_is_cut_at_a_paragraph_and_flagged_others_stay_whole(engine: Engine) -> None:
    lore = "\n\n".join(f"Paragraph {i}: " + "Ava remembers the harbour lights and the gulls. " * 3
                       for i in range(8))
    record = engine.write_canon("ava", "harbour", lore, actor="director:test", at=T0)
    engine.profiles.set(TuningProfile(character_id="ava", context=ContextParams(max_pin_tokens=120)))
    result = recall(engine, "tell me about the sea", T0 + timedelta(days=3))
    trace = result.trace.context  # type: ignore[attr-defined]
    prefix = result.context.prefix  # type: ignore[attr-defined]
    assert trace.pins_truncated == (record.memory_id,) and record.memory_id in trace.pins
    kept = [p for p in lore.split("\n\n") if p in prefix]
    assert kept and lore.startswith("\n\n".join(kept))  # whole paragraphs from the start, never mid-paragraph
    assert "cut here" in prefix
    assert "Ava grew up in Galway and still misses the sea." in prefix  # the small canon fact stays whole


def test_the_standing_rule_is_in_the_prefix_and_reads_the_same_every_day(engine: Engine) -> None:
    a = recall(engine, "What should I cook tonight?", T0 + timedelta(days=300))
    b = recall(engine, "What should I cook tonight?", T0 + timedelta(days=301))
    assert a.standing_rules and a.context.prefix == b.context.prefix  # type: ignore[attr-defined]
    assert "On 2 March 2025 they said" in a.context.prefix  # type: ignore[attr-defined]


def test_the_recall_log_answers_what_the_character_saw(engine: Engine) -> None:
    result = recall(engine, "I went for a walk in the park this morning.", T0 + timedelta(days=9))
    again = engine.recall_record(result.recall_id, Partition(character_id="ava", user_id="u1"))  # type: ignore[attr-defined]
    assert again == result
    from engine.domain.errors import NotFound

    with pytest.raises(NotFound):
        engine.recall_record(result.recall_id, Partition(character_id="ava", user_id="u2"))  # type: ignore[attr-defined]
    engine.erase_user("ava", "u1", actor="runtime:test")
    with pytest.raises(NotFound):
        engine.recall_record(result.recall_id, Partition(character_id="ava", user_id="u1"))  # type: ignore[attr-defined]


def test_memories_sit_with_the_most_important_at_the_edges() -> None:
    from prompts.context import edges_first

    assert edges_first(6) == [0, 2, 4, 5, 3, 1]
    assert edges_first(1) == [0] and edges_first(0) == []

