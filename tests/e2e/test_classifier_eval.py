"""`feltsense eval classifier` on the real evaluation sets: the shipped classifier beats its lexicon baseline, and
every set is read and scored for every classifier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.emotion_sets import SETS
from tests.conftest import shared_path

CLASSIFIERS = ["v2", "v1", "VADER"]


@pytest.mark.slow
@pytest.mark.data
def test_the_shipped_classifier_beats_vader_on_held_out_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = shared_path("data")
    out = tmp_path / "classifier.json"
    assert main(["eval", "classifier", "--data", str(data), "--sets", "goemotions,emobank,grief-check",
                 "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| measure | v2 | v1 | VADER |" in table
    report = json.loads(out.read_text())
    assert list(report["classifiers"]) == CLASSIFIERS
    go = report["sets"]["goemotions"]["results"]
    emobank = report["sets"]["emobank"]["results"]
    for label in ("v2", "v1"):
        assert go[label]["register"]["macro_f1"] > go["VADER"]["register"]["macro_f1"]
        assert emobank[label]["valence"]["pearson_r"] > emobank["VADER"]["valence"]["pearson_r"]
    assert go["v1"]["register"]["n"] > 4000 and emobank["v1"]["valence"]["n"] == 1000
    assert report["sets"]["goemotions"]["registers_scored"] == [
        "grief", "sadness", "anxiety", "anger", "shame", "joy", "affection", "pride", "curiosity", "neutral"]
    assert report["sets"]["grief-check"]["results"]["v1"]["register"]["accuracy"] > 0.5


@pytest.mark.slow
@pytest.mark.data
def test_every_set_is_scored_for_every_classifier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = shared_path("data")
    out = tmp_path / "classifier.json"
    assert main(["eval", "classifier", "--data", str(data), "--limit", "25", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert list(report["sets"]) == list(SETS)
    for name, entry in report["sets"].items():
        assert 0 < entry["sessions"] <= 25, name
        assert f"### {name}:" in table and f"| {name} |" in table
        for label in CLASSIFIERS:
            results = entry["results"][label]
            assert any(results[m] is not None for m in ("register", "valence", "intensity")), (name, label)
            if results["register"] is not None:
                assert 0.0 <= results["register"]["macro_f1"] <= 1.0
    assert report["sets"]["esconv"]["results"]["v1"]["intensity"]["n"] > 0
    assert report["sets"]["isear"]["results"]["v1"]["intensity"]["n"] > 0
    assert report["sets"]["meld"]["results"]["v1"]["valence"]["n"] > 0
    assert "isarcasmeval" in report["skipped"] and "mustard" in report["skipped"]


def test_missing_data_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "classifier", "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "does not hold any evaluation set" in err and "goemotions/" in err
