"""The HTML report of the shipped tester transcripts, replayed by the real CLI on the embedded default."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

import eval.transcripts as transcripts
from engine.transcripts.model import Transcript
from engine.transcripts.replay import ProbeResult, TranscriptEngine
from eval.cli import main
from eval.report import BAR_SCALE_NOTE, COMPONENTS, MULTIPLIERS, bar_for, emotional_traces
from eval.transcripts import TranscriptRun
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def test_the_example_transcripts_report_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = shared_path("transcripts", "examples")
    runs: list[TranscriptRun] = []
    snapshot = transcripts.snapshot

    def spy(transcript: Transcript, engine: TranscriptEngine, results: Sequence[ProbeResult]) -> TranscriptRun:
        runs.append(snapshot(transcript, engine, results))
        return runs[-1]

    monkeypatch.setattr(transcripts, "snapshot", spy)
    page_path, json_path = tmp_path / "report.html", tmp_path / "report.json"

    status = main(["eval", "run", str(examples), "--html", str(page_path), "--json", str(json_path)])

    out = capsys.readouterr().out
    assert status == 0, out
    report = json.loads(json_path.read_text())
    page = page_path.read_text(encoding="utf-8")

    # Self-contained: nothing to fetch, nothing to run.
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*[a-z][a-z0-9+.-]*:""", page, re.I)
    assert "<script" not in page and "<link" not in page and "url(" not in page

    # Every probe, with its verdict and message.
    assert page.count('<section class="probe pass"') == report["probes"] == report["passed"] >= 4
    for result in report["results"]:
        assert html.escape(result["recall"]["query"]["message"]) in page

    # A bar per score component for every recalled memory.
    recalled = sum(len(result["recall"]["memories"]) for result in report["results"])
    assert page.count('<li class="memory"') == recalled > 0
    for name, _ in COMPONENTS:
        assert page.count(f'data-component="{name}"') == recalled

    # Each bar on its one stated scale: a multiplier at 1 draws nothing, a boost goes right, a penalty left.
    assert page.count(BAR_SCALE_NOTE) == sum(bool(result["recall"]["memories"]) for result in report["results"])
    drawn = re.findall(r'<div class="bar-row" data-component="(\w+)".*?<span class="(half down|half up|bar linear)">'
                       r'<span class="fill[^"]*" data-direction="\w+" style="width:([\d.]+)%"', page, re.S)
    values = [memory["components"][name] for result in report["results"] for memory in result["recall"]["memories"]
              for name, _ in COMPONENTS]
    assert len(drawn) == len(values)
    sides = {"half down": "down", "half up": "up", "bar linear": "linear"}
    seen = set()
    for (name, side, width), value in zip(drawn, values, strict=True):
        assert float(width) == pytest.approx(bar_for(name, value).width_percent, abs=0.05)
        if name not in MULTIPLIERS:
            assert sides[side] == "linear"
        elif value == 1.0:
            assert float(width) == 0.0
            seen.add("none")
        else:
            assert sides[side] == ("up" if value > 1.0 else "down")
            seen.add(sides[side])
    assert seen == {"none", "up", "down"}

    # One salience plot per emotional trace, each with its probes marked, and the threshold drawn.
    assert sorted(run.transcript.id for run in runs) == ["coffee-and-move", "luna-grief"]
    traced = [(run, memory) for run in runs for memory, _ in emotional_traces(run)]
    assert any(run.transcript.id == "luna-grief" for run, _ in traced)
    plots = re.findall(r'<svg class="salience-plot".*?</svg>', page, re.S)
    assert len(plots) == len(traced)
    for plot, (run, memory) in zip(plots, traced, strict=True):
        assert f'data-memory="{memory.memory_id}"' in plot
        after = [r for r in run.results if r.query.at is not None and r.query.at >= memory.created_at]
        assert plot.count('class="probe-marker"') == len(after)
        assert plot.count('class="threshold"') == 1
