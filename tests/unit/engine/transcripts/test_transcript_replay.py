"""Replaying transcripts into an engine (FORMAT.md "Replay") and checking probes: ``engine.transcripts``.

The engine here is a small fake (``canned``) that records every call and answers recall with canned results built
from the real ``engine.domain.models``, so these tests pin the runner's side of the contract without any model or
store. Running transcripts, reporting and the CLI are tested in tests/unit/eval/test_transcript_runner.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.domain.models import (
    RecallQuery,
    RecallResult,
    WindowTurn,
)
from engine.transcripts.checks import check_probe
from engine.transcripts.format import parse_transcript
from engine.transcripts.model import Probe, ToneCheck
from engine.transcripts.replay import replay
from tests.unit.engine.transcripts.canned import (
    GRIEF_LUNA,
    JOY_COFFEE,
    LEEDS_MEMORY,
    LUNA,
    LUNA_MEMORY,
    STANDING_GRIEF,
    STANDING_JOY,
    START,
    FakeEngine,
    luna_recall,
    recall_result,
)

# -- replay -------------------------------------------------------------------------------------------------


def test_replay_stores_turns_closes_sessions_and_probes_in_the_order_format_md_gives() -> None:
    transcript = parse_transcript(LUNA, file="luna.yaml")
    engine = FakeEngine()

    replay(transcript, engine)

    session_1 = START + timedelta(days=9)
    steps: list[tuple[str, object]] = []
    for name, payload in engine.calls:
        if name == "ingest":
            assert isinstance(payload, tuple)
            steps.append((name, ",".join(turn.turn_id for turn in payload)))
        elif name == "close_session":
            steps.append((name, payload))
    assert steps == [
        ("ingest", "luna:s0:t0"),
        ("ingest", "luna:s0:t1"),
        ("ingest", "luna:s0:t2"),
        ("close_session", ("luna:s0", session_1)),
        ("ingest", "luna:s1:t0"),
        ("ingest", "luna:s1:t1"),
        ("ingest", "luna:s1:t2"),
        ("close_session", ("luna:s1", session_1 + timedelta(seconds=30, minutes=2))),
    ]
    names = [name for name, _ in engine.calls]
    # Each probe recalls before its own turn is stored, and after the previous session closed.
    assert names[3:] == ["close_session", "recall", "ingest", "ingest", "recall", "ingest", "close_session"]


def test_a_probe_recalls_with_the_users_message_and_the_session_so_far_at_its_time() -> None:
    transcript = parse_transcript(LUNA, file="luna.yaml")
    seen_at_recall: list[list[str]] = []

    def answer(query: RecallQuery) -> RecallResult:
        seen_at_recall.append([turn.turn_id for turn in engine.stored])
        return recall_result()

    engine = FakeEngine(answer)
    replay(transcript, engine)

    queries = [payload for name, payload in engine.calls if name == "recall"]
    session_1 = START + timedelta(days=9)
    assert queries == [
        RecallQuery(
            character_id="ava",
            user_id="tester-1",
            message="I went for a walk in the park.",
            window=(),  # the session's first line: nothing said before it in this session
            session_id="luna:s1",
            at=session_1,
        ),
        RecallQuery(
            character_id="ava",
            user_id="tester-1",
            message="Quiet.",
            # As a runtime would: the session so far, passed with the recall.
            window=(WindowTurn(role="user", text="I went for a walk in the park."),
                    WindowTurn(role="character", text="How was it?")),
            session_id="luna:s1",
            at=session_1 + timedelta(seconds=30, minutes=2),
        ),
    ]
    assert "luna:s1:t0" not in seen_at_recall[0]
    assert seen_at_recall[1][-1] == "luna:s1:t1"


def test_turns_are_stored_with_their_roles_timestamps_and_the_transcripts_partition() -> None:
    transcript = parse_transcript(LUNA, file="luna.yaml")
    engine = FakeEngine()

    replay(transcript, engine)

    first = engine.stored[:3]
    assert [(turn.role, turn.timestamp, turn.session_id) for turn in first] == [
        ("user", START, "luna:s0"),
        ("character", START + timedelta(seconds=45), "luna:s0"),
        ("user", START + timedelta(seconds=75), "luna:s0"),
    ]
    assert {(turn.character_id, turn.user_id) for turn in engine.stored} == {("ava", "tester-1")}
    assert first[1].text == "I'm so sorry."


def test_replay_reports_each_probe_with_its_place() -> None:
    transcript = parse_transcript(LUNA, file="luna.yaml")

    results = replay(transcript, FakeEngine(luna_recall))

    assert [(r.transcript, r.session, r.turn, r.line, r.passed) for r in results] == [
        ("luna", 1, 0, 14, True),
        ("luna", 1, 2, 18, True),
    ]


# -- checks -------------------------------------------------------------------------------------------------


# (probe, recall, the failing checks' names; empty when the probe passes)
CHECKS: dict[str, tuple[Probe, RecallResult, list[str]]] = {
    "tone: register and anchor": (
        Probe(tone=(ToneCheck(("grief", "sadness"), ("luna",)),)),
        recall_result(tone_constraints=[GRIEF_LUNA]),
        [],
    ),
    "tone: anchor named only in the instruction": (
        Probe(tone=(ToneCheck(("grief",), ("LUNA",)),)),
        recall_result(standing_rules=[STANDING_GRIEF]),
        [],
    ),
    "tone: anchor as a substring": (
        Probe(tone=(ToneCheck(anchors_any=("Lun",)),)),
        recall_result(tone_constraints=[GRIEF_LUNA]),
        [],
    ),
    "tone: wrong register": (
        Probe(tone=(ToneCheck(("sadness",), ("Luna",)),)),
        recall_result(tone_constraints=[GRIEF_LUNA]),
        ["tone[0]"],
    ),
    "tone: register and anchor on different constraints": (
        Probe(tone=(ToneCheck(("joy",), ("Luna",)),)),
        recall_result(tone_constraints=[GRIEF_LUNA, JOY_COFFEE]),
        ["tone[0]"],
    ),
    "tone: register only": (
        Probe(tone=(ToneCheck(("joy",)),)),
        recall_result(tone_constraints=[JOY_COFFEE]),
        [],
    ),
    "tone: every item must hold": (
        Probe(tone=(ToneCheck(("grief",)), ToneCheck(("anxiety",)))),
        recall_result(tone_constraints=[GRIEF_LUNA]),
        ["tone[1]"],
    ),
    "tone: an empty item wants some constraint": (Probe(tone=(ToneCheck(),)), recall_result(), ["tone[0]"]),
    "tone: nothing in force": (Probe(tone=(ToneCheck(("grief",), ("Luna",)),)), recall_result(), ["tone[0]"]),
    "no_tone: other registers only": (
        Probe(no_tone=("grief",)),
        recall_result(tone_constraints=[JOY_COFFEE]),
        [],
    ),
    "no_tone: a standing rule counts": (
        Probe(no_tone=("grief", "sadness")),
        recall_result(standing_rules=[STANDING_GRIEF]),
        ["no_tone"],
    ),
    "no_tone any: none in force": (Probe(no_tone="any"), recall_result([LUNA_MEMORY]), []),
    "no_tone any: one in force": (
        Probe(no_tone="any"),
        recall_result(tone_constraints=[JOY_COFFEE]),
        ["no_tone"],
    ),
    "recall_any: case-insensitive substring": (
        Probe(recall_any=("nope", "luna")),
        recall_result([LUNA_MEMORY]),
        [],
    ),
    "recall_any: nothing recalled": (Probe(recall_any=("Luna",)), recall_result(), ["recall_any"]),
    "recall_any: only the memory's text counts": (
        Probe(recall_any=("Luna",)),
        recall_result([LEEDS_MEMORY], tone_constraints=[GRIEF_LUNA], system="Luna", tail="Luna"),
        ["recall_any"],
    ),
    "recall_all: spread over memories": (
        Probe(recall_all=("luna", "LEEDS")),
        recall_result([LUNA_MEMORY, LEEDS_MEMORY]),
        [],
    ),
    "recall_all: one missing": (
        Probe(recall_all=("Luna", "Lisbon")),
        recall_result([LUNA_MEMORY]),
        ["recall_all"],
    ),
    "recall_none: absent": (Probe(recall_none=("Leeds",)), recall_result([LUNA_MEMORY]), []),
    "recall_none: present": (
        Probe(recall_none=("leeds",)),
        recall_result([LUNA_MEMORY, LEEDS_MEMORY]),
        ["recall_none"],
    ),
    "context_any: in the system prefix": (
        Probe(context_any=("gentle",)),
        recall_result(system="Be gentle.", tail="- walks"),
        [],
    ),
    "context_any: in the tail": (
        Probe(context_any=("Lisbon",)),
        recall_result(system="x", tail="moved to lisbon"),
        [],
    ),
    "context_any: absent": (
        Probe(context_any=("Lisbon",)),
        recall_result(system="x", tail="Leeds"),
        ["context_any"],
    ),
    "context_none: absent": (Probe(context_none=("Leeds",)), recall_result(system="x", tail="Lisbon"), []),
    "context_none: present": (
        Probe(context_none=("leeds",)),
        recall_result(system="LEEDS", tail=""),
        ["context_none"],
    ),
    "several checks fail together": (
        Probe(recall_any=("Luna",), context_any=("Luna",), no_tone="any"),
        recall_result(standing_rules=[STANDING_JOY]),
        ["no_tone", "recall_any", "context_any"],
    ),
}


@pytest.mark.parametrize(("probe", "recall", "failing"), CHECKS.values(), ids=CHECKS.keys())
def test_probe_checks(probe: Probe, recall: RecallResult, failing: list[str]) -> None:
    failures = check_probe(probe, recall)

    assert [failure.split(":", 1)[0] for failure in failures] == failing


def test_failure_messages_say_what_was_expected_and_what_was_found() -> None:
    failures = check_probe(
        Probe(
            tone=(ToneCheck(("sadness",), ("Luna",)),),
            no_tone=("joy",),
            recall_any=("Luna",),
            recall_all=("Leeds", "Lisbon"),
            recall_none=("rain",),
            context_any=("Luna",),
            context_none=("Leeds",),
        ),
        recall_result([LEEDS_MEMORY], [GRIEF_LUNA], [STANDING_JOY], system="", tail="- I live in Leeds"),
    )

    assert failures == (
        "tone[0]: expected a tone constraint with register sadness naming Luna in force; "
        "in force: grief [Luna]; joy (standing) [coffee]",
        "no_tone: expected no tone constraint with register joy; found joy (standing) [coffee]",
        "recall_any: expected a recalled memory containing one of 'Luna'; none of the 1 recalled does",
        "recall_all: expected each of 'Leeds', 'Lisbon' in some recalled memory; missing 'Lisbon'",
        "recall_none: expected no recalled memory containing 'rain'; "
        "found 'rain' in 'I live in Leeds, the rain is relentless.'",
        "context_any: expected the assembled context to contain one of 'Luna'; it has none",
        "context_none: expected the assembled context to contain none of 'Leeds'; it has 'Leeds'",
    )
