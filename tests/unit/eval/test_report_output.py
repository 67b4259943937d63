"""Where ``eval run`` writes its reports: only where --json and --html say, and it says where on stderr."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from eval.cli import main
from tests.fakes import hashing_engine_in
from tests.sessions import LUNA_TRANSCRIPT_HEAD

REPO = Path(__file__).resolve().parents[3]
LUNA = LUNA_TRANSCRIPT_HEAD + """\
  - at: "+9d"
    turns:
      - user: "I went for a walk with Luna's old lead."
        probe:
          recall_any: [Luna]
"""


hashing_factory = hashing_engine_in


def test_bare_names_land_in_the_working_directory_and_their_full_paths_are_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    status = main(["eval", "run", str(tmp_path / "luna.yaml"), "--json", "report.json", "--html", "report.html"],
                  engine_factory=hashing_factory)

    captured = capsys.readouterr()
    assert status in (0, 1), captured
    assert sorted(path.name for path in work.iterdir()) == ["report.html", "report.json"]
    assert json.loads((work / "report.json").read_text())["probes"] == 1
    assert f"wrote the JSON report to {work.resolve() / 'report.json'}" in captured.err
    assert f"wrote the HTML report to {work.resolve() / 'report.html'}" in captured.err
    assert captured.out.splitlines()[-1].endswith("failed")  # stdout still ends on the summary line


def test_without_json_or_html_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)
    monkeypatch.chdir(tmp_path)

    main(["eval", "run", "luna.yaml"], engine_factory=hashing_factory)

    assert [path.name for path in tmp_path.iterdir()] == ["luna.yaml"]
    assert "wrote" not in capsys.readouterr().err


def test_the_readmes_report_names_in_the_checkout_are_git_ignored() -> None:
    names = ["report.html", "report.json"]
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    ignored = subprocess.run(["git", "check-ignore", *names], cwd=REPO, capture_output=True, text=True, check=False)

    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.stdout.split() == names
