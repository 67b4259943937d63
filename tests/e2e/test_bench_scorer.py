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
    for key in ("median_us", "reference_median_us", "engine_median_us"):
        assert 0 < result[key] <= result[key.replace("median", "p99")]
