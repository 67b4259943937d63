"""Recall reads the conversation window, on both stores, with the real MiniLM embedder: the window says what a
vague message is about, the session's stored turns are the window when the runtime passes none (only this
user's), anchors the window names boost less than the message's, and a standing rule stays a rule."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import RecallQuery, RecallResult, Turn, WindowTurn
from engine.service import Engine
from tests.engines import STORES, engine_on

T0 = datetime(2025, 4, 2, 9, tzinfo=UTC)
LATER = T0 + timedelta(days=200)
PAST = [
    "My job interview at the bank went really badly, I froze on the first question.",
    "We repainted the kitchen a pale green colour this weekend.",
    "My sister Hana is moving to Osaka for work next month.",
    "The new running shoes are comfortable, did five kilometres today.",
    "I binged the whole detective series on Sunday, no regrets.",
    "Work has been quiet, mostly spreadsheets this week.",
    "My cat keeps knocking the plants off the windowsill.",
    "Made a big pot of chilli and froze half of it.",
]
INTERVIEW = (
    WindowTurn(role="user", text="I've got another job interview tomorrow morning."),
    WindowTurn(role="character", text="Oh, that's big news! How are you feeling about it?"),
    WindowTurn(role="user", text="Honestly I'm so nervous I can barely eat."),
)


@pytest.fixture(params=STORES)
def engine(request: pytest.FixtureRequest, tmp_path: Path, onnx_embedder: Any) -> Iterator[Engine]:
    with engine_on(request, tmp_path, onnx_embedder, ledger=SqliteLedger.in_memory(), prefix="Window") as built:
        yield built


def say(engine: Engine, session: str, texts: list[tuple[str, str]], at: datetime, *, user: str = "tester",
        close: bool = True) -> None:
    turns = [Turn(turn_id=f"{user}-{session}-{i}", session_id=f"{user}-{session}", character_id="ava", user_id=user,
                  role=role, text=text, timestamp=at + timedelta(minutes=i))  # type: ignore[arg-type]
             for i, (role, text) in enumerate(texts)]
    engine.ingest(turns)
    if close:
        engine.close_session(f"{user}-{session}", closed_at=at + timedelta(hours=1))


def remember_the_past(engine: Engine) -> None:
    for i, text in enumerate(PAST):
        say(engine, f"past{i}", [("user", text)], T0 + timedelta(days=3 * i))


def rank_of(result: RecallResult, needle: str) -> int | None:
    return next((i for i, m in enumerate(result.memories) if needle in m.text), None)


def test_the_window_says_what_a_vague_message_is_about(engine: Engine) -> None:
    remember_the_past(engine)
    ask = dict(character_id="ava", user_id="tester", message="Any tips for tomorrow?", at=LATER)
    alone = engine.recall(RecallQuery(**ask, window=()))  # type: ignore[arg-type]
    read = engine.recall(RecallQuery(**ask, window=INTERVIEW))  # type: ignore[arg-type]

    assert read.trace.window_source == "passed" and read.trace.window_turns == 3
    assert alone.trace.window_source == "none" and alone.trace.window_turns == 0
    with_window = rank_of(read, "interview at the bank")
    assert with_window == 0, [m.text for m in read.memories]
    without = rank_of(alone, "interview at the bank")
    assert without is None or without > with_window
    assert read.memories[0].tier in ("standard", "high")


def test_the_message_leads_and_the_window_is_context(engine: Engine) -> None:
    remember_the_past(engine)
    # The window was about the interview; the message changes the subject, and the message wins.
    result = engine.recall(RecallQuery(character_id="ava", user_id="tester", at=LATER, window=INTERVIEW,
                                       message="Anyway, how is my sister Hana settling in over in Osaka?"))
    assert rank_of(result, "Hana is moving to Osaka") == 0


def test_the_sessions_stored_turns_are_the_window_and_only_this_users(engine: Engine) -> None:
    remember_the_past(engine)
    say(engine, "now", [("user", INTERVIEW[0].text), ("character", INTERVIEW[1].text), ("user", INTERVIEW[2].text)],
        LATER - timedelta(minutes=10), close=False)
    found = engine.recall(RecallQuery(character_id="ava", user_id="tester", session_id="tester-now",
                                      include_current_session=False, message="Any tips for tomorrow?", at=LATER))
    assert found.trace.window_source == "stored" and found.trace.window_turns == 3
    assert found.trace.excluded_current_session == 2  # the session's own user turns are not memories to recall
    assert rank_of(found, "interview at the bank") == 0

    # Another user naming this session gets no window from it (and nothing of this user's at all).
    say(engine, "elsewhere", [("user", "I like gardening.")], T0, user="other")
    stranger = engine.recall(RecallQuery(character_id="ava", user_id="other", session_id="tester-now",
                                         message="Any tips for tomorrow?", at=LATER))
    assert stranger.trace.window_source == "none"
    assert all("interview" not in m.text for m in stranger.memories)


def test_an_anchor_the_window_names_boosts_less_than_the_messages(engine: Engine) -> None:
    say(engine, "rafa", [("user", "Rafael and I went hiking in the Peak District, the views were amazing.")], T0)
    say(engine, "misc", [("user", "The hiking boots I bought last year finally fell apart.")], T0 + timedelta(days=1))
    window = (WindowTurn(role="user", text="Rafael called me last night."),)
    via_window = engine.recall(RecallQuery(character_id="ava", user_id="tester", at=LATER, window=window,
                                           message="We should go hiking again."))
    via_message = engine.recall(RecallQuery(character_id="ava", user_id="tester", at=LATER, window=(),
                                            message="Rafael and I should go hiking again."))
    hike_w = next(m for m in via_window.memories if "Rafael" in m.text)
    hike_m = next(m for m in via_message.memories if "Rafael" in m.text)
    assert hike_w.window_anchors == ("Rafael",) and hike_w.matched_anchors == ()
    assert hike_m.matched_anchors == ("Rafael",) and hike_m.window_anchors == ()
    assert 1.0 < hike_w.components.anchor_boost < hike_m.components.anchor_boost


def test_a_window_about_luna_does_not_turn_her_standing_rule_back_into_memories(engine: Engine) -> None:
    say(engine, "loss", [("user", "My dog Luna died last night."), ("user", "I miss her so much.")], T0)
    a_year_on = T0 + timedelta(days=300)
    window = (WindowTurn(role="user", text="I keep thinking about Luna."),
              WindowTurn(role="character", text="She was a very good dog."))
    result = engine.recall(RecallQuery(character_id="ava", user_id="tester", at=a_year_on, window=window,
                                       message="I went for a walk in the park this morning."))
    assert any(rule.standing and "Luna" in rule.anchors for rule in result.standing_rules)
    assert all("Luna died" not in m.text for m in result.memories)
