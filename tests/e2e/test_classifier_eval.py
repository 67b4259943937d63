"""`feltsense eval classifier` on the real held-out splits: the shipped classifier beats its lexicon baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def test_the_shipped_classifier_beats_vader_on_held_out_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = shared_path("data")
    out = tmp_path / "classifier.json"
    assert main(["eval", "classifier", "--data", str(data), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| feltsense | VADER (same run) |" in table
    report = json.loads(out.read_text())
    assert report["register"]["macro_f1"] > report["register"]["vader_macro_f1"]
    assert report["valence"]["pearson_r"] > report["valence"]["vader_pearson_r"]
    assert report["register"]["n"] > 4000 and report["valence"]["n"] == 1000


def test_missing_data_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "classifier", "--data", str(tmp_path / "nowhere")]) == 2
    assert "does not hold goemotions/ and emobank/" in capsys.readouterr().err
