"""``feltsense eval anchors``: the labelled file's shape, the scoring, and the command (v1 beside v2).

The shipped labelled file names turns of the evaluation sets in ../shared/data (their text is not copied into
the project), so the run over it is marked ``data``; the command's own behaviour is pinned on lines written here,
which carry their text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval.anchors_eval import LABELLED, SPLITS, Counts, load
from eval.cli import main

DATA_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data"
ROW = re.compile(r"^(v1|v2)\s+(dev|test)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)$", re.MULTILINE)


def _rows(out: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    return {(m[1], m[2]): (float(m[3]), float(m[4]), float(m[5])) for m in ROW.finditer(out)}


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


OWN_LINES: list[dict[str, object]] = [
    {"split": "dev", "text": "My sister Noor got engaged at the Juniper Lodge!",
     "anchors": ["sister", "Noor", "Juniper Lodge"]},
    {"split": "dev", "text": "WOW. I AM SO HAPPY FOR HER", "anchors": []},
    {"split": "test", "text": "Went home and watched telly, nothing much.", "anchors": []},
    {"split": "test", "text": "Dario said he needs space.", "context": ["Dario and I have been fighting a lot."],
     "anchors": ["Dario"]},
]


def test_micro_scores_count_whole_anchors_case_insensitively() -> None:
    counts = Counts()
    counts.add(1, ["Copper Kettle", "sister"], ["copper kettle", "Sister", "Ana"])
    counts.add(2, ["Copper"], [])
    assert counts.scores()["precision"] == pytest.approx(2 / 3, abs=1e-3)
    assert counts.scores()["recall"] == pytest.approx(2 / 3, abs=1e-3)
    assert [line for line, _, _ in counts.errors] == [1, 2]


def test_the_command_prints_v1_and_v2_on_both_halves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labelled = _write(tmp_path / "labelled.jsonl", OWN_LINES)
    assert main(["eval", "anchors", "--labelled", str(labelled), "--data", str(tmp_path), "--show", "test"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert set(rows) == {(v, s) for v in ("v1", "v2") for s in SPLITS}
    assert rows[("v2", "dev")] == (1.0, 1.0, 1.0) and rows[("v2", "test")] == (1.0, 1.0, 1.0)
    assert rows[("v1", "dev")][0] < 1.0  # v1 takes "WOW", "HAPPY" and more for names
    assert "v1 errors on test" in out and "telly" in out  # --show lists the errors with the turns


def test_the_command_writes_json_without_the_turns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labelled = _write(tmp_path / "labelled.jsonl", OWN_LINES)
    out = tmp_path / "report.json"
    assert main(["eval", "anchors", "--labelled", str(labelled), "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["scores"]) == {"v1", "v2"} and "texts" not in report
    capsys.readouterr()


def test_a_missing_or_malformed_labelled_file_is_exit_status_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "anchors", "--labelled", str(tmp_path / "absent.jsonl")]) == 2
    bad = _write(tmp_path / "bad.jsonl", [{"split": "train", "text": "x", "anchors": []}])
    assert main(["eval", "anchors", "--labelled", str(bad)]) == 2
    unreadable = _write(tmp_path / "source.jsonl", [{"split": "dev", "anchors": [],
                                                      "source": {"set": "esconv", "file": "esconv/test.jsonl",
                                                                 "line": 1, "turn": 1}}])
    assert main(["eval", "anchors", "--labelled", str(unreadable), "--data", str(tmp_path)]) == 2
    assert "not found" in capsys.readouterr().err


def test_the_shipped_file_names_its_turns_and_puts_dev_before_test() -> None:
    lines = [json.loads(raw) for raw in LABELLED.read_text(encoding="utf-8").splitlines()]
    assert all({"source", "split", "sha1", "anchors"} <= set(line) and "text" not in line for line in lines)
    splits = [line["split"] for line in lines]
    assert splits == sorted(splits, key=SPLITS.index) and splits.count("test") == 100
    assert len({json.dumps(line["source"], sort_keys=True) for line in lines}) == len(lines)


@pytest.mark.data
def test_the_shipped_set_prints_v1_and_v2_and_v2_is_better(capsys: pytest.CaptureFixture[str]) -> None:
    if not all((DATA_DIR / folder).is_dir() for folder in ("esconv", "empatheticdialogues", "dailydialog", "locomo")):
        pytest.skip(f"../shared/data not found at {DATA_DIR}: the labelled turns are read from its evaluation sets")
    assert len(load(LABELLED, DATA_DIR)) == len(LABELLED.read_text(encoding="utf-8").splitlines())
    assert main(["eval", "anchors", "--data", str(DATA_DIR)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert set(rows) == {(v, s) for v in ("v1", "v2") for s in SPLITS}
    for split in SPLITS:
        assert rows[("v2", split)][2] > rows[("v1", split)][2]  # F1


@pytest.mark.data
def test_the_seeded_draw_repeats_the_shipped_file() -> None:
    if not all((DATA_DIR / folder).is_dir() for folder in ("esconv", "empatheticdialogues", "dailydialog", "locomo")):
        pytest.skip(f"../shared/data not found at {DATA_DIR}: the draw reads its evaluation sets")
    from eval.anchors_eval import draw

    shipped = [json.loads(raw) for raw in LABELLED.read_text(encoding="utf-8").splitlines()]
    drawn = draw(DATA_DIR)
    assert [(d["source"], d["split"], d["sha1"]) for d in drawn] == [(s["source"], s["split"], s["sha1"])
                                                                     for s in shipped]
