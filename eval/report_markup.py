"""What the sections of the HTML report (``eval.report``) share: escaping, and how times, durations and numbers
are written."""

from __future__ import annotations

import html
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import Trace
from eval.transcripts import TranscriptRun

F64 = NDArray[np.float64]
SECONDS_PER_DAY = 86_400.0


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def when_text(moment: datetime | None) -> str:
    return "now" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(days: float) -> str:
    """An age as people say it: minutes, hours or days."""
    seconds = days * SECONDS_PER_DAY
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if days < 1:
        return f"{seconds / 3600:.1f} h"
    return f"{days:.1f} d"


def num(value: float) -> str:
    return f"{value:.3f}"


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text)


def probe_label(index: int) -> str:
    return f"P{index + 1}"


def badge(passed: bool) -> str:
    return '<span class="badge pass">PASS</span>' if passed else '<span class="badge fail">FAIL</span>'


def anchor(run: TranscriptRun) -> str:
    return "t-" + slug(run.transcript.id)


def trace_line(trace: Trace) -> str:
    anchors = ", ".join(trace.anchors) or "none"
    return (f"{trace.register}, intensity {trace.intensity:.2f}, valence {trace.valence:+.2f}, "
            f"anchors: {anchors}")
