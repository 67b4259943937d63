"""Replaying transcripts into an engine (FORMAT.md "Replay"), checking probes, reporting, and the CLI.

The engine here is a small fake that records every call and answers recall with canned results built from the
real ``engine.domain.models``, so these tests pin the runner's side of the contract without any model or store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import (
    AssembledContext,
    CloseReport,
    IngestReport,
    Leg,
    RecalledMemory,
    RecallQuery,
    RecallResult,
    RecallTrace,
    Register,
    ScoreComponents,
    ToneConstraint,
    Trace,
    TraceStatus,
    Turn,
    WindowTurn,
)
from engine.transcripts.checks import check_probe
from engine.transcripts.format import parse_transcript
from engine.transcripts.model import Probe, ToneCheck
from engine.transcripts.replay import ProbeResult, replay
from eval.cli import main
from eval.transcripts import format_result, run_transcripts

START = datetime(2025, 3, 2, 18, tzinfo=UTC)

LUNA = """\
format: 1
id: luna
character: ava
user: tester-1
sessions:
  - at: "2025-03-02T18:00:00Z"
    turns:
      - user: "My dog Luna died last week."
      - character: "I'm so sorry."
        at: "+45s"
      - user: "She was fourteen."
  - at: "+9d"
    turns:
      - user: "I went for a walk in the park."
        probe:
          recall_any: [Luna]
      - character: "How was it?"
      - user: "Quiet."
        at: "+2m"
        probe:
          no_tone: any
"""


# -- canned engine answers ----------------------------------------------------------------------------------


def memory(text: str, *, register: Register | None = None, anchors: tuple[str, ...] = ()) -> RecalledMemory:
    trace = None
    if register is not None:
        trace = Trace(
            memory_id=f"m-{text[:8]}",
            status=TraceStatus.COMPLETE,
            register=register,
            intensity=0.8,
            anchors=anchors,
            written_at=START,
        )
    return RecalledMemory(
        memory_id=f"m-{text[:8]}",
        text=text,
        context="",
        session_id="luna:s0",
        created_at=START,
        legs=(Leg.VECTOR, Leg.LEXICAL),
        trace=trace,
        matched_anchors=anchors,
        components=ScoreComponents(
            relevance=0.8125,
            salience=0.5,
            salience_weight=0.75,
            anchor_boost=1.3,
            age_days=9.0,
            half_life_days=30.0,
            score=0.7922,
        ),
    )


def tone(
    register: Register,
    anchors: tuple[str, ...] = (),
    instruction: str = "Be gentle.",
    *,
    standing: bool = False,
) -> ToneConstraint:
    return ToneConstraint(
        register=register,
        anchors=anchors,
        instruction=instruction,
        source_memory_ids=("m-1",),
        standing=standing,
        intensity=0.8,
        valence=-0.7,
    )


def recall_result(
    memories: Sequence[RecalledMemory] = (),
    tone_constraints: Sequence[ToneConstraint] = (),
    standing_rules: Sequence[ToneConstraint] = (),
    *,
    system: str = "",
    tail: str = "",
) -> RecallResult:
    return RecallResult(
        memories=tuple(memories),
        tone_constraints=tuple(tone_constraints),
        standing_rules=tuple(standing_rules),
        context=AssembledContext(prefix=system, tone="", tail=tail),
        trace=RecallTrace(
            mode="hybrid",
            legs=(Leg.VECTOR, Leg.LEXICAL),
            vector_candidates=len(memories),
            lexical_candidates=len(memories),
            fused_candidates=len(memories),
            dropped_below_floor=0,
            excluded_current_session=0,
            standing_rule_memories=len(standing_rules),
            timings_ms={"total": 1.0},
            profile_version=1,
        ),
    )


class FakeEngine:
    """Records every call in order; recall answers from ``answer`` (an empty result by default)."""

    def __init__(self, answer: Callable[[RecallQuery], RecallResult] | None = None) -> None:
        self.calls: list[tuple[str, object]] = []
        self.stored: list[Turn] = []
        self.closed = False
        self.answer = answer or (lambda query: recall_result())

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        self.calls.append(("ingest", tuple(turns)))
        self.stored.extend(turns)
        return IngestReport(
            stored=len(turns), duplicates=0, memories=sum(turn.role == "user" for turn in turns)
        )

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> CloseReport:
        self.calls.append(("close_session", (session_id, closed_at)))
        return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)

    def recall(self, query: RecallQuery) -> RecallResult:
        self.calls.append(("recall", query))
        return self.answer(query)

    def close(self) -> None:
        self.closed = True


def luna_recall(query: RecallQuery) -> RecallResult:
    return recall_result([memory("My dog Luna died last week.", register="grief", anchors=("Luna",))])


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


def test_each_transcript_gets_a_fresh_engine_in_its_own_directory_removed_afterwards() -> None:
    first = parse_transcript(LUNA, file="a.yaml")
    second = parse_transcript(LUNA.replace("id: luna", "id: luna-2"), file="b.yaml")
    engines: list[FakeEngine] = []
    directories: list[Path] = []

    def factory(data_dir: Path) -> FakeEngine:
        assert data_dir.is_dir() and not any(data_dir.iterdir())
        directories.append(data_dir)
        engines.append(FakeEngine(luna_recall))
        return engines[-1]

    report = run_transcripts([first, second], engine_factory=factory)

    assert len(engines) == 2 and all(engine.closed for engine in engines)
    assert len(set(directories)) == 2 and not any(directory.exists() for directory in directories)
    assert {turn.session_id for turn in engines[1].stored} == {"luna-2:s0", "luna-2:s1"}
    assert (report.transcripts, len(report.results), report.passed, report.failed) == (2, 4, 4, 0)


def test_an_engine_is_closed_and_its_directory_removed_even_when_replay_fails() -> None:
    transcript = parse_transcript(LUNA, file="luna.yaml")
    engine = FakeEngine()
    directories: list[Path] = []

    def broken_recall(query: RecallQuery) -> RecallResult:
        raise RuntimeError("store went away")

    engine.answer = broken_recall

    def factory(data_dir: Path) -> FakeEngine:
        directories.append(data_dir)
        return engine

    with pytest.raises(RuntimeError, match="store went away"):
        run_transcripts([transcript], engine_factory=factory)

    assert engine.closed
    assert not directories[0].exists()


# -- checks -------------------------------------------------------------------------------------------------

GRIEF_LUNA = tone("grief", ("Luna",), "Be gentle about her dog.")
STANDING_GRIEF = tone("grief", ("dog",), "Never be cheerful about Luna.", standing=True)
JOY_COFFEE = tone("joy", ("coffee",), "Keep it light.")
STANDING_JOY = tone("joy", ("coffee",), "Keep it light.", standing=True)
LUNA_MEMORY = memory("My dog Luna died last week.")
LEEDS_MEMORY = memory("I live in Leeds, the rain is relentless.")

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


# -- reporting ----------------------------------------------------------------------------------------------


def probe_result(failures: tuple[str, ...], recall: RecallResult) -> ProbeResult:
    query = RecallQuery(
        character_id="ava", user_id="tester-1", message="I went for a walk.", session_id="luna:s1"
    )
    return ProbeResult(
        transcript="luna",
        file="luna.yaml",
        line=14,
        session=1,
        turn=0,
        query=query,
        failures=failures,
        recall=recall,
    )


def test_a_passing_probe_is_one_line() -> None:
    line = format_result(probe_result((), recall_result()))

    assert line == "PASS luna sessions[1].turns[0]: 'I went for a walk.'"


def test_a_failing_probe_shows_what_recall_returned_with_score_components_and_tone() -> None:
    recalled = memory("My dog Luna died last week.", register="grief", anchors=("Luna",))
    text = format_result(
        probe_result(("recall_any: ...",), recall_result([recalled], standing_rules=[STANDING_JOY]))
    )

    lines = text.splitlines()
    assert lines[0] == "FAIL luna sessions[1].turns[0]: 'I went for a walk.'"
    assert "luna.yaml:14" in lines[1]
    assert "expected recall_any: ..." in text
    assert "'My dog Luna died last week.'" in text
    for component in [
        "relevance=0.812",
        "salience=0.500",
        "anchor_boost=1.300",
        "score=0.792",
        "age_days=9.000",
    ]:
        assert component in text
    assert "grief" in text and "matched anchors: Luna" in text
    assert "joy (standing) [coffee]: 'Keep it light.'" in text


# -- the command line ---------------------------------------------------------------------------------------


def fake_factory(answer: Callable[[RecallQuery], RecallResult]) -> Callable[[Path], FakeEngine]:
    return lambda data_dir: FakeEngine(answer)


def test_cli_exits_0_when_every_probe_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)

    status = main(["eval", "run", str(tmp_path)], engine_factory=fake_factory(luna_recall))

    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out == [
        "PASS luna sessions[1].turns[0]: 'I went for a walk in the park.'",
        "PASS luna sessions[1].turns[2]: 'Quiet.'",
        "2 passed, 0 failed",
    ]


def test_cli_exits_1_when_a_probe_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)

    status = main(
        ["eval", "run", str(tmp_path / "luna.yaml")],
        engine_factory=fake_factory(lambda query: recall_result()),
    )

    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines()[0].startswith("FAIL luna sessions[1].turns[0]")
    assert "expected recall_any" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_cli_exits_2_and_runs_nothing_when_a_transcript_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-good.yaml").write_text(LUNA)
    (tmp_path / "b-bad.yaml").write_text(LUNA.replace("recall_any: [Luna]", "recall_any: Luna"))
    report = tmp_path / "report.json"
    built: list[Path] = []

    def factory(data_dir: Path) -> FakeEngine:
        built.append(data_dir)
        return FakeEngine()

    status = main(["eval", "run", str(tmp_path), "--json", str(report)], engine_factory=factory)

    captured = capsys.readouterr()
    assert status == 2
    assert built == [] and not report.exists() and captured.out == ""
    assert (
        f"{tmp_path / 'b-bad.yaml'}:16: sessions[1].turns[0].probe.recall_any: expected a list of strings"
        in (captured.err)
    )


def test_cli_writes_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)
    report_path = tmp_path / "out" / "report.json"
    report_path.parent.mkdir()

    def answer(query: RecallQuery) -> RecallResult:
        if query.message == "Quiet.":
            return recall_result(tone_constraints=[GRIEF_LUNA])
        return luna_recall(query)

    status = main(
        ["eval", "run", str(tmp_path), "--json", str(report_path)], engine_factory=fake_factory(answer)
    )

    assert status == 1
    report = json.loads(report_path.read_text())
    assert {key: report[key] for key in ("transcripts", "probes", "passed", "failed")} == {
        "transcripts": 1,
        "probes": 2,
        "passed": 1,
        "failed": 1,
    }
    first, second = report["results"]
    assert set(first) == {"transcript", "session", "turn", "passed", "failures", "recall"}
    assert (first["transcript"], first["session"], first["turn"], first["passed"], first["failures"]) == (
        "luna",
        1,
        0,
        True,
        [],
    )
    assert (second["turn"], second["passed"]) == (2, False)
    assert second["failures"][0].startswith("no_tone: expected no tone constraint in force")
    recall = first["recall"]
    assert recall["mode"] == "hybrid"
    assert recall["query"]["message"] == "I went for a walk in the park."
    (recalled,) = recall["memories"]
    assert recalled["text"] == "My dog Luna died last week."
    assert recalled["components"]["anchor_boost"] == 1.3
    assert recalled["trace"]["register"] == "grief"
    assert second["recall"]["tone_constraints"][0]["anchors"] == ["Luna"]
    assert second["recall"]["standing_rules"] == []


def test_cli_needs_a_subcommand_and_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["eval"], ["eval", "run"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    capsys.readouterr()


def test_cli_exits_3_when_the_run_breaks_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Python's own status for a crash is 1, which would read as "a probe failed".
    (tmp_path / "luna.yaml").write_text(LUNA)

    def broken_factory(data_dir: Path) -> FakeEngine:
        raise RuntimeError("model weights missing")

    status = main(["eval", "run", str(tmp_path)], engine_factory=broken_factory)

    captured = capsys.readouterr()
    assert status == 3
    assert "model weights missing" in captured.err
    assert "passed" not in captured.out


def test_the_runner_drives_the_real_engine_facade(tmp_path: Path) -> None:
    from engine.adapters.embedded_store import EmbeddedStore
    from engine.adapters.hashing_embedder import HashingEmbedder
    from engine.service import Engine
    from tests.fakes import KeywordClassifier

    embedder = HashingEmbedder()
    engines: list[Engine] = []

    def factory(data_dir: Path) -> Engine:
        store = EmbeddedStore(data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
        engines.append(Engine(ledger=SqliteLedger.in_memory(),
                              store=store, embedder=embedder, classifier=KeywordClassifier()))
        return engines[-1]

    report = run_transcripts([parse_transcript(LUNA, file="luna.yaml")], engine_factory=factory)

    assert [(result.session, result.turn) for result in report.results] == [(1, 0), (1, 2)]
    # The first session was closed (its write-time pass ran) before the probe in the second one recalled.
    assert all(memory.session_id == "luna:s0" for memory in report.results[0].recall.memories)
    recalled = report.results[0].recall.memories
    assert recalled and all(memory.trace is not None for memory in recalled if memory.kind == "turn")
    assert any(memory.kind == "fact" for memory in recalled)  # the pass distilled "Luna" as a fact
