"""`feltsense bench scorer` end to end at a toy size: it runs, and the kernel ranks as the reference does."""

from __future__ import annotations

import json

import pytest

from eval.cli import main


def test_bench_scorer_measures_the_kernel_the_reference_and_recalls_stage_two(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["bench", "scorer", "--iterations", "20", "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert result["rankings_identical_cases"] == 200
    # Each of the three is measured and reported: the kernel, the slow reference, and recall's whole stage two.
    for measured in ("", "reference_", "engine_"):
        assert result[f"{measured}median_us"] > 0 and f"{measured}p99_us" in result
