"""`feltsense bench serve` end to end, at toy sizes: a real service process, loaded and driven over loopback."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from eval.cli import main

pytestmark = pytest.mark.slow


def test_bench_serve_starts_loads_drives_and_cleans_up(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["bench", "serve", "--users", "3", "--memories-per-user", "20", "--requests", "40",
                   "--concurrency", "4", "--rate", "20", "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err

    result = json.loads(captured.out.strip().splitlines()[-1])
    assert list(result)[:4] == ["throughput_rps", "p50_ms", "p99_ms", "errors"]
    assert result["errors"] == 0, captured.err
    assert result["saturation"]["ok"] == 40 and result["paced"]["ok"] == 40
    # The paced drive really is paced: 40 recalls offered at 20/s take about two seconds, not a burst.
    assert result["paced"]["elapsed_s"] >= 39 / 20
    assert result["throughput_rps"] == result["saturation"]["throughput_rps"] > 0
    # The headline latencies are the paced drive's (what a user sees at a steady rate), not the burst's.
    assert (result["p50_ms"], result["p99_ms"]) == (result["paced"]["p50_ms"], result["paced"]["p99_ms"])
    assert result["memories_stored"] == 60 and result["sessions"] == 3
    # the CPU a recall costs, the service's (its pid is known when the bench started it) beside the bench's own
    for drive in ("saturation", "paced"):
        assert result[drive]["service_cpu_ms_per_recall"] > 0 and result[drive]["bench_cpu_ms_per_recall"] > 0

    assert "using its development key" in captured.err  # found in the service's output, sent on every call

    # The service it started is stopped, and its temporary data directory removed.
    started = re.search(r"\(pid (\d+), data and log in (\S+)\)", captured.err)
    assert started is not None, captured.err
    with pytest.raises(ProcessLookupError):
        os.kill(int(started.group(1)), 0)
    assert not Path(started.group(2)).exists()


def test_the_soak_reports_each_window_and_the_memory_growth(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["bench", "serve", "--users", "2", "--memories-per-user", "10", "--duration", "2",
                   "--window", "1", "--rate", "10", "--concurrency", "2", "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert [w["window"] for w in result["windows"]] == [1, 2]
    assert all(w["errors"] == 0 and w["ok"] == 10 and w["rss_mb"] > 0 for w in result["windows"])
    assert result["within_bound"] and result["rss_growth_mb"] is not None
    assert captured.err.count("soak window") == 2
