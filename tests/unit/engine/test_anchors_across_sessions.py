"""Anchors across sessions: the writer hands the anchor pass the user's earlier turns that share its words.

The write-time pass sees one session; a thing said once in each of two sessions, or a name capitalised inside a
sentence only in an earlier one, is found through the store's substring search (``TraceWriter._earlier_texts``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.domain.models import Turn
from engine.service import Engine

T0 = datetime(2025, 6, 1, 19, tzinfo=UTC)


def _session(engine: Engine, session: str, texts: list[str], *, day: int, user: str = "u1") -> list[tuple[str, ...]]:
    start = T0 + timedelta(days=day)
    turns = [Turn(turn_id=f"{session}-{i}", session_id=session, character_id="ava", user_id=user, role="user",
                  text=text, timestamp=start + timedelta(minutes=i)) for i, text in enumerate(texts)]
    engine.ingest(turns)
    engine.close_session(session, closed_at=start + timedelta(hours=1))
    memories = engine.store.session_memories(session)
    traces = engine.store.get_traces([m.memory_id for m in memories])
    return [traces[m.memory_id].anchors for m in memories]


def test_a_thing_said_once_in_each_of_two_sessions_is_an_anchor_of_the_second(hashing_engine: Engine) -> None:
    assert _session(hashing_engine, "s1", ["I booked the pottery class for Saturday."], day=0) == [()]
    later = _session(hashing_engine, "s2", ["Weather is grim.", "The pottery class was messy but fun."], day=7)
    assert later == [(), ("pottery",)]


def test_a_name_confirmed_in_an_earlier_session_counts_at_a_sentence_start(hashing_engine: Engine) -> None:
    _session(hashing_engine, "s1", ["We named the new kitten Pepper, she is tiny."], day=0)
    assert "Pepper" in _session(hashing_engine, "s2", ["Pepper threw up on the rug again."], day=3)[0]


def test_another_users_turns_confirm_nothing(hashing_engine: Engine) -> None:
    _session(hashing_engine, "s1", ["I booked the pottery class for Saturday."], day=0, user="someone-else")
    assert _session(hashing_engine, "s2", ["The pottery class was messy but fun."], day=7) == [()]
