"""Running transcripts (``eval.transcripts``): a fresh engine per transcript, reporting, and the CLI.

The engine here is the small fake of tests/unit/engine/transcripts/canned.py, so these tests pin the runner's side
of the contract without any model or store. Replay and the probe checks are tested beside ``engine.transcripts``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import (
    RecallQuery,
    RecallResult,
)
from engine.transcripts.format import parse_transcript
from engine.transcripts.replay import ProbeResult
from eval.cli import main
from eval.transcripts import format_result, run_transcripts
from tests.unit.engine.transcripts import canned
from tests.unit.engine.transcripts.canned import LUNA, FakeEngine, luna_recall, memory, recall_result

# -- running transcripts ------------------------------------------------------------------------------------


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
        probe_result(("recall_any: ...",), recall_result([recalled], standing_rules=[canned.STANDING_JOY]))
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
            return recall_result(tone_constraints=[canned.GRIEF_LUNA])
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
