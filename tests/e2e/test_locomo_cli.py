"""``feltsense eval locomo`` end to end on LoCoMo's first conversation: real models, the documented JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.conftest import shared_path

pytestmark = [pytest.mark.slow, pytest.mark.data]

KEYS = {"R@1", "R@5", "R@6", "R@10"}


def check(block: dict[str, dict[str, float]]) -> None:
    assert set(block) == KEYS
    assert all(isinstance(v, float) and 0.0 <= v <= 100.0 for v in block.values()), block


def test_one_conversation_reports_every_method(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = shared_path("data", "locomo")
    out_path = tmp_path / "locomo.json"
    status = main(["eval", "locomo", "--data", str(data), "--limit-conversations", "1", "--json", str(out_path)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    result = json.loads(out_path.read_text())
    assert list(result) == ["methods"] and list(result["methods"]) == ["dense", "bm25", "stage1", "stage2"]
    for method in result["methods"].values():
        assert set(method) == {"overall", "by_category", "corrected"}
        for block in (method, method["corrected"]):
            check(block["overall"])
            assert set(block["by_category"]) == {"1", "2", "3", "4", "5"}
            for values in block["by_category"].values():
                check(values)
    assert "overall (categories 1-4)" in captured.out and "stage2" in captured.out
    assert "\r[" in captured.err  # the progress bar
