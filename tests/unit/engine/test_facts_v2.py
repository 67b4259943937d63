"""Facts v2 through the engine: changes supersede to exactly the last value, endings end a slot, and the user's
tastes in food and drink are in Path A whatever the message says."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from engine.domain.models import RecallQuery, RecallResult, Turn
from engine.service import Engine
from traces.facts import extract

T0 = datetime(2025, 1, 6, 9, tzinfo=UTC)
ORDERING = "I'm at the café ordering for the team, what should I get for myself?"


def say(engine: Engine, session: str, day: float, *lines: str) -> None:
    """One closed session: the user's lines, each answered by the character."""
    start = T0 + timedelta(days=day)
    turns: list[Turn] = []
    for i, line in enumerate(lines):
        turns.append(Turn(turn_id=f"{session}-u{i}", session_id=session, character_id="ava", user_id="u1",
                          role="user", text=line, timestamp=start + timedelta(seconds=60 * i)))
        turns.append(Turn(turn_id=f"{session}-c{i}", session_id=session, character_id="ava", user_id="u1",
                          role="character", text="Oh, tell me more.", timestamp=start + timedelta(seconds=60 * i + 30)))
    engine.ingest(turns)
    engine.close_session(session, closed_at=start + timedelta(hours=1))


def recall(engine: Engine, message: str, day: float) -> RecallResult:
    return engine.recall(RecallQuery(character_id="ava", user_id="u1", message=message, session_id="probe",
                                     at=T0 + timedelta(days=day)))


def current(engine: Engine, relation: str, subject: str = "user") -> list[str]:
    return [fact.fact.value for fact, state in engine.list_facts("user", "ava", "u1")
            if fact.fact is not None and (fact.fact.subject, fact.fact.relation) == (subject, relation)
            and state.status == "active"]


def test_three_job_changes_leave_exactly_the_last_current_and_path_a_says_it(hashing_engine: Engine) -> None:
    say(hashing_engine, "s1", 0, "I work at Brightline Studios, it's a small animation place.")
    say(hashing_engine, "s2", 60, "Big news: I started at Kestrel Media on Monday.")
    say(hashing_engine, "s3", 150, "I've joined Orbit Foods! New team, new commute.")
    assert current(hashing_engine, "works_at") == ["Orbit Foods"]
    prefix = recall(hashing_engine, "Remind me where I work these days?", 200).context.prefix
    assert 'The user works at "Orbit Foods".' in prefix
    assert 'works at "Brightline' not in prefix and 'works at "Kestrel' not in prefix


def test_an_ending_ends_the_slot_and_a_story_about_an_old_job_does_not(hashing_engine: Engine) -> None:
    say(hashing_engine, "s1", 0, "I work at Brightline Studios.")
    say(hashing_engine, "s2", 30, "I started at Kestrel Media last week.")
    # About the job before: Kestrel stays current.
    say(hashing_engine, "s3", 40, "Honestly I left Brightline Studios because the hours were mad.")
    assert current(hashing_engine, "works_at") == ["Kestrel Media"]
    say(hashing_engine, "s4", 90, "I don't work at Kestrel Media any more.")
    assert current(hashing_engine, "works_at") == ["no longer Kestrel Media"]
    prefix = recall(hashing_engine, "What's new?", 100).context.prefix
    assert 'The user no longer works at "Kestrel Media".' in prefix
    assert 'The user works at "' not in prefix


@pytest.mark.parametrize(("subject", "relation", "sessions", "last"), [
    ("user", "relationship", ["I'm single, happily.", "We got engaged last night!", "We got married in May."],
     "married"),
    ("user", "lives_with", ["I live with my parents.", "I moved in with Sam last month.", "I live alone now."],
     "alone"),
    ("user", "studies_at", ["I'm a student at Kingston College.", "I'm starting at Leeds University in September!",
                            "I graduated!"], "graduated"),
    ("user", "diet", ["I'm vegetarian.", "I went vegan in January.", "I'm not vegan any more."], "no longer vegan"),
    ("coffee", "preference", ["I take my coffee black.", "I have my coffee with oat milk now.",
                              "I always put a splash of almond milk in my coffee."], "with a splash of almond milk"),
    ("coriander", "taste", ["I love coriander.", "I can't stand coriander, it tastes of soap.",
                            "I adore coriander now, weirdly."], "adores"),
    ("film", "favourite", ["My favourite film is Alien.", "Spirited Away is my favourite film.",
                           "My favourite film is Paddington 2."], "Paddington 2"),
    ("cat", "has", ["I have a cat.", "We've got two cats now.", "I have three cats, send help."], "three cats"),
])
def test_a_to_b_to_c_leaves_exactly_c_current_on_every_new_relation(
    hashing_engine: Engine, subject: str, relation: str, sessions: list[str], last: str,
) -> None:
    for i, line in enumerate(sessions):
        say(hashing_engine, f"s{i}", 40 * i, line)
    assert current(hashing_engine, relation, subject) == [last]


def test_a_coffee_preference_reaches_the_context_for_an_order_that_shares_no_word_with_it(
    hashing_engine: Engine,
) -> None:
    say(hashing_engine, "s1", 0, "Morning! I take my coffee with oat milk and one sugar, every single time.")
    say(hashing_engine, "s2", 20, "Work has been hectic, the new project is eating my evenings.")
    sentence = 'The user takes "coffee" "with oat milk and one sugar".'
    words = set(re.findall(r"[a-zé]+", ORDERING.lower()))
    assert not words & {"coffee", "oat", "milk", "sugar", "takes"}  # nothing for retrieval to find it by
    result = recall(hashing_engine, ORDERING, 150)  # five months later
    assert sentence in result.context.prefix  # Path A: whatever the message says


def test_preferences_stay_within_their_share_of_path_a_most_recent_first(hashing_engine: Engine) -> None:
    foods = ["sushi", "ramen", "olives", "mango", "pesto", "falafel", "paella", "risotto", "tofu", "nachos",
             "waffles", "pancakes", "burritos", "tacos", "dumplings", "lasagne", "curry", "salmon", "hummus",
             "croissants", "bagels", "pretzels", "brownies", "cheesecake", "tiramisu", "baklava", "churros", "kebabs",
             "noodles", "pizza"]
    assert {f.relation for food in foods for f in extract(f"I love {food}.")} == {"taste"}
    for i, food in enumerate(foods):
        say(hashing_engine, f"s{i}", i, f"I love {food}.")
    say(hashing_engine, "job", 40, "I work at Orbit Foods.")
    first = recall(hashing_engine, ORDERING, 60)
    prefix = first.context.prefix
    assert 'The user works at "Orbit Foods".' in prefix  # never crowded out
    shown = [food for food in foods if f'"{food}"' in prefix]
    assert 0 < len(shown) < len(foods)
    assert shown == foods[len(foods) - len(shown):]  # the most recently stated
    assert recall(hashing_engine, "What's up?", 61).context.prefix == prefix  # still byte-stable


def test_a_pet_who_died_reads_as_dead_beside_the_grief_rule_and_a_new_pet_reads_as_alive(
        hashing_engine: Engine) -> None:
    say(hashing_engine, "s1", 0, "My dog Luna died last week.", "I keep expecting her at the door.")
    prefix = recall(hashing_engine, "I went for a walk in the park today.", 9).context.prefix
    assert 'The user\'s dog, "Luna", has died.' in prefix
    assert 'is called "Luna"' not in prefix  # never as if she were alive
    say(hashing_engine, "s2", 200, "We adopted a puppy! My dog Pip is a menace already.")
    prefix = recall(hashing_engine, "Pip chewed my shoes.", 201).context.prefix
    assert 'The user\'s dog is called "Pip".' in prefix
    assert 'The user\'s dog, "Luna", has died.' in prefix  # Luna's death is still true; Pip is alive
