"""The shipped tester transcripts pass on the embedded default, replayed by the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def test_every_example_transcript_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = shared_path("transcripts", "examples")
    report_path = tmp_path / "report.json"
    status = main(["eval", "run", str(examples), "--json", str(report_path)])
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text())
    assert status == 0, out
    assert report["failed"] == 0 and report["passed"] == report["probes"] >= 4
    assert out.strip().splitlines()[-1] == f"{report['probes']} passed, 0 failed"


def test_the_repositorys_own_transcripts_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ours (tests/transcripts): a changed job supersedes the old one, which is never recalled as current."""
    report_path = tmp_path / "report.json"
    status = main(["eval", "run", str(Path(__file__).parents[1] / "transcripts"), "--json", str(report_path)])
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text())
    assert status == 0, out
    assert report["failed"] == 0 and report["passed"] == report["probes"] >= 1
