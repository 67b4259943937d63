"""The HTML report of ``feltsense eval run --html``: one page that shows why each probe passed or failed.

The page is self-contained because it is passed around and opened from disk: inline CSS and SVG, no script,
nothing fetched (inline SVG in HTML needs no namespace URL, so the page names no address at all). Every string
from a transcript or the engine is escaped. The salience curves are computed with the scorer's own function
(``scoring.rerank.salience_for``) and the character's profile, so a plot shows what ranking saw. Every bar has
one fixed scale, stated on the page: relevance and the score on 0 to 1, a multiplier as its effect on the score
(``MULTIPLIERS``), so no bar depends on what else the page holds.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import (
    Memory,
    MemoryKind,
    RecalledMemory,
    RecallResult,
    ScoreComponents,
    ToneConstraint,
    Trace,
    TraceStatus,
)
from engine.domain.tuning import TuningProfile
from engine.recall import standing_bar
from engine.strength import stage_two_params
from engine.transcripts.model import Probe
from engine.transcripts.replay import ProbeResult
from eval.transcripts import RunReport, TranscriptRun
from scoring.rerank import salience_for

F64 = NDArray[np.float64]
SECONDS_PER_DAY = 86_400.0
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("relevance", "relevance"),
    ("salience_weight", "salience weight"),
    ("anchor_boost", "anchor boost"),
    ("strength", "strength"),
    ("scope_weight", "scope weight"),
    ("score", "score"),
)
"""The factors of a stage-two score drawn as bars (``ScoreComponents``), the product last."""
MULTIPLIERS = frozenset({"salience_weight", "anchor_boost", "strength", "scope_weight"})
"""The factors that multiply relevance (``scoring.rerank``): at 1 they leave the score as it is. Their bars show
their effect on the score from a centre line, right for a boost and left for a penalty, on a log scale, so ×2 and
×0.5 draw the same length in opposite directions and no effect draws nothing. Relevance and the score are drawn
on 0 to 1 (the score passes 1 when a boost outweighs the penalties; its bar then ends clipped)."""
EFFECT_HALF_SCALE = 4.0
"""A multiplier's bar fills its half at ×4 (or ×0.25): ×2 reaches halfway, the default anchor boost (at most ×2.5)
fits, and a stale memory's strength (×0.2 by default) ends clipped, the largest penalty short of zero."""
BAR_SCALE_NOTE = (
    '<p class="bar-scale muted">Bars: relevance and score on 0 to 1, full width = 1. The multipliers (salience '
    "weight, anchor boost, strength, scope weight) as their effect on the score, from the centre line on a log "
    f"scale: right a boost, left a penalty, a half-bar = ×{EFFECT_HALF_SCALE:g} (×2 and ×0.5 reach halfway), no bar "
    "at ×1. A notched end is off the scale. Hover a bar for its exact value.</p>"
)
"""The scales of the bars, stated above every probe's memories."""
MIN_PLOT_DAYS = 1.0
"""A trace said just before the last probe still gets a day of curve, so its decay is visible."""
MAX_SAMPLES = 2000

# Plot geometry, in SVG user units.
PLOT_W, PLOT_H = 760, 230
LEFT, RIGHT, TOP, BOTTOM = 46, 18, 14, 36

CSS = """
:root { --pass: #1a7f37; --fail: #c62828; --muted: #5f6b7a; --line: #d9dee5; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #fff;
       margin: 0 auto; max-width: 1180px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 12px; } h2 { font-size: 19px; margin: 0 0 6px; }
h3 { font-size: 15px; margin: 0 0 6px; } h4 { font-size: 13px; margin: 14px 0 6px; color: var(--muted);
       text-transform: uppercase; letter-spacing: .04em; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 10px; white-space: pre-wrap;
      word-break: break-word; margin: 4px 0 10px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 8px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
a { color: #0b5cad; text-decoration: none; } a:hover { text-decoration: underline; }
.muted { color: var(--muted); }
.badge { display: inline-block; font-size: 11px; font-weight: 700; border-radius: 10px; padding: 1px 8px;
         color: #fff; vertical-align: 1px; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.tag { display: inline-block; font-size: 11px; border: 1px solid var(--line); border-radius: 4px; padding: 0 5px;
       margin-right: 3px; background: var(--bg); }
.tag.stale { border-color: var(--fail); color: var(--fail); } .tag.standing { border-color: #8250df; color: #8250df; }
.stats { display: flex; gap: 12px; margin: 8px 0 14px; }
.stat { border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px; min-width: 110px; }
.stat b { display: block; font-size: 22px; } .stat.fail b { color: var(--fail); } .stat.pass b { color: var(--pass); }
.transcript { border: 1px solid var(--line); border-radius: 10px; padding: 16px; margin: 22px 0; }
.transcript > header { border-bottom: 1px solid var(--line); padding-bottom: 8px; margin-bottom: 10px; }
.probe { border-left: 4px solid var(--line); padding: 8px 0 8px 14px; margin: 18px 0; }
.probe.pass { border-left-color: var(--pass); } .probe.fail { border-left-color: var(--fail); }
.message { margin: 6px 0; padding: 6px 10px; background: var(--bg); border-radius: 6px; font-size: 15px; }
.failures { color: var(--fail); margin: 6px 0; padding-left: 20px; }
.checks { margin: 4px 0; }
.memories { list-style: none; padding: 0; margin: 0; display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.memory { border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
.memory .text { font-weight: 600; } .memory .meta { color: var(--muted); font-size: 12px; margin: 2px 0 6px; }
.rank { display: inline-block; min-width: 20px; color: var(--muted); }
.bar-row { display: grid; grid-template-columns: 104px 1fr 52px; align-items: center; gap: 6px; font-size: 12px; }
.bar { display: flex; height: 9px; background: #eef1f4; border-radius: 5px; overflow: hidden; }
.bar .half { display: flex; flex: 1 1 50%; height: 100%; }
.bar .half.down { justify-content: flex-end; border-right: 1px solid #9aa4af; }
.fill { display: block; height: 100%; border-radius: 5px; background: #6e8fb5; }
.half.down .fill { border-radius: 5px 0 0 5px; } .half.up .fill { border-radius: 0 5px 5px 0; }
/* A value off the scale: the bar ends in a notch instead of a round end. */
.fill.clipped { border-radius: 0; box-shadow: inset -2px 0 0 #fff, inset -4px 0 0 #555, inset -6px 0 0 #fff; }
.half.down .fill.clipped { box-shadow: inset 2px 0 0 #fff, inset 4px 0 0 #555, inset 6px 0 0 #fff; }
.bar-scale { font-size: 12px; margin: -2px 0 8px; }
.bar-scale i { display: inline-block; width: 10px; height: 9px; border-radius: 2px; vertical-align: -1px; }
.fill.relevance { background: #4c8bf5; } .fill.salience_weight { background: #e07a3f; }
.fill.anchor_boost { background: #b456c8; } .fill.strength { background: #3f9e8f; }
.fill.scope_weight { background: #8d99a6; } .fill.score { background: #1f2328; }
.bar-value { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: 6px 0; } summary { cursor: pointer; color: #0b5cad; }
.plots { display: grid; gap: 14px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
figcaption { font-size: 12.5px; }
svg.salience-plot { max-width: 900px; display: block; }
svg text { font: 11px system-ui, sans-serif; fill: #5f6b7a; }
svg .grid { stroke: #eef1f4; } svg .axis { stroke: #9aa4af; }
svg .curve { fill: none; stroke: #c2410c; stroke-width: 2; } svg .area { fill: #c2410c; fill-opacity: .08; }
svg .threshold { stroke: #8250df; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .probe-line { stroke: #0b5cad; stroke-width: 1.2; } svg .probe-dot { fill: #0b5cad; }
svg text.probe-label { fill: #0b5cad; font-weight: 700; } svg text.threshold-label { fill: #8250df; }
.convo td.role { width: 90px; color: var(--muted); } .convo td.when { width: 190px; color: var(--muted); }
.convo tr.probe-turn td { background: #fff8e6; }
@media (max-width: 900px) { .memories { grid-template-columns: 1fr; } }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(moment: datetime | None) -> str:
    return "now" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(days: float) -> str:
    """An age as people say it: minutes, hours or days."""
    seconds = days * SECONDS_PER_DAY
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if days < 1:
        return f"{seconds / 3600:.1f} h"
    return f"{days:.1f} d"


def _n(value: float) -> str:
    return f"{value:.3f}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text)


def _probe_label(index: int) -> str:
    return f"P{index + 1}"


# ------------------------------------------------------------------------------------------------------------
# The page


def render_html(report: RunReport) -> str:
    """The whole page as one string, from a report ``run_transcripts`` made (it keeps a run per transcript)."""
    body = [
        "<h1>feltsense eval report</h1>",
        _summary(report, report.runs),
        *(_transcript_section(run) for run in report.runs),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>feltsense eval: {report.passed} passed, {report.failed} failed</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def write_html(report: RunReport, path: Path) -> None:
    path.write_text(render_html(report), encoding="utf-8")


def _summary(report: RunReport, runs: Sequence[TranscriptRun]) -> str:
    stats = (
        f'<div class="stats"><div class="stat"><b>{report.transcripts}</b>transcripts</div>'
        f'<div class="stat"><b>{len(report.results)}</b>probes</div>'
        f'<div class="stat pass"><b>{report.passed}</b>passed</div>'
        f'<div class="stat fail"><b>{report.failed}</b>failed</div></div>'
    )
    rows = []
    for run in runs:
        failed = sum(not result.passed for result in run.results)
        rows.append(
            f"<tr><td>{_badge(run.passed)}</td>"
            f'<td><a href="#{_e(_anchor(run))}">{_e(run.transcript.id)}</a></td>'
            f"<td class=\"mono\">{_e(run.transcript.file)}</td>"
            f"<td>{len(run.results) - failed} / {len(run.results)}</td>"
            f"<td>{_e(run.transcript.description.strip())}</td></tr>"
        )
    table = (
        "<table><tr><th></th><th>transcript</th><th>file</th><th>probes passed</th><th>description</th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else ""
    )
    return f'<section class="summary">{stats}{table}</section>'


def _badge(passed: bool) -> str:
    return '<span class="badge pass">PASS</span>' if passed else '<span class="badge fail">FAIL</span>'


def _anchor(run: TranscriptRun) -> str:
    return "t-" + _slug(run.transcript.id)


# ------------------------------------------------------------------------------------------------------------
# One transcript


def _transcript_section(run: TranscriptRun) -> str:
    transcript = run.transcript
    head = (
        f'<header><h2>{_badge(run.passed)} {_e(transcript.id)}</h2>'
        f'<div class="muted"><span class="mono">{_e(transcript.file)}</span> · character '
        f"<b>{_e(transcript.character)}</b> · user <b>{_e(transcript.user)}</b> · "
        f"{len(transcript.sessions)} sessions · {len(run.results)} probes</div>"
        + (f"<p>{_e(transcript.description.strip())}</p>" if transcript.description.strip() else "")
        + "</header>"
    )
    parts = [head, _conversation(run), _trace_plots(run)]
    parts.extend(_probe_section(run, index, result) for index, result in enumerate(run.results))
    return f'<section class="transcript" id="{_e(_anchor(run))}">' + "".join(parts) + "</section>"


def _conversation(run: TranscriptRun) -> str:
    """The transcript as replayed, collapsed: every turn with its time, the probes marked."""
    probe_at = {(result.session, result.turn): index for index, result in enumerate(run.results)}
    rows = []
    for session in run.transcript.sessions:
        rows.append(f'<tr><th colspan="3">session {session.index} · {_e(_when(session.start))}</th></tr>')
        for turn in session.turns:
            index = probe_at.get((session.index, turn.index))
            mark = "" if index is None else f' <span class="tag">{_probe_label(index)}</span>'
            css = ' class="probe-turn"' if index is not None else ""
            rows.append(
                f'<tr{css}><td class="when">{_e(_when(turn.at))}</td><td class="role">{_e(turn.role)}{mark}</td>'
                f"<td>{_e(turn.text)}</td></tr>"
            )
    return (
        f"<details><summary>The transcript ({sum(len(s.turns) for s in run.transcript.sessions)} turns)</summary>"
        f'<table class="convo">{"".join(rows)}</table></details>'
    )


# ------------------------------------------------------------------------------------------------------------
# Salience over the timeline


def emotional_traces(run: TranscriptRun) -> list[tuple[Memory, Trace]]:
    """The memories the engine kept whose trace is emotional, in the order they were said."""
    found = [(memory, trace) for memory, trace in run.memories or () if trace is not None
             and trace.kind is MemoryKind.EMOTIONAL]
    return sorted(found, key=lambda pair: (pair[0].created_at, pair[0].memory_id))


def salience_series(trace: Trace, ages_days: Sequence[float] | F64, profile: TuningProfile) -> tuple[F64, F64]:
    """The trace's salience (and half-life) at each age, by the scorer's function with the character's decay
    constants: the curve is what ranking saw."""
    ages = np.asarray(ages_days, dtype=np.float64)
    return salience_for(
        np.full(len(ages), trace.intensity, dtype=np.float64), ages, np.ones(len(ages), dtype=bool),
        stage_two_params(profile),
    )


def sample_ages(span_days: float) -> F64:
    """Hourly over a month or less, daily beyond (at most ``MAX_SAMPLES``), always ending on ``span_days``."""
    step = 1 / 24 if span_days <= 30 else 1.0
    step = max(step, span_days / MAX_SAMPLES)
    ages = np.arange(0.0, span_days, step, dtype=np.float64)
    return np.append(ages, span_days)


def _trace_plots(run: TranscriptRun) -> str:
    if run.memories is None:
        return '<h4>Emotional traces</h4><p class="muted">The engine offered no memories to plot.</p>'
    traces = emotional_traces(run)
    if not traces:
        return '<h4>Emotional traces</h4><p class="muted">No memory of this transcript has an emotional trace.</p>'
    profile = run.profile or TuningProfile()
    figures = [_salience_plot(memory, trace, run, profile) for memory, trace in traces]
    return (
        f"<h4>Emotional traces: salience over the timeline ({len(traces)})</h4>"
        f'<div class="plots">{"".join(figures)}</div>'
    )


def _salience_plot(memory: Memory, trace: Trace, run: TranscriptRun, profile: TuningProfile) -> str:
    said = memory.created_at
    probes = [(index, result, at) for index, result in enumerate(run.results) if (at := result.query.at) is not None]
    last = max((at for _, _, at in probes), default=said)
    span = (max(last, said + timedelta(days=MIN_PLOT_DAYS)) - said).total_seconds() / SECONDS_PER_DAY
    ages = sample_ages(span)
    later = [(index, result, (at - said).total_seconds() / SECONDS_PER_DAY)
             for index, result, at in probes if at >= said]
    earlier = [index for index, _, at in probes if at < said]
    everything, half_lives = salience_series(trace, np.concatenate([ages, [age for _, _, age in later]]), profile)
    curve, at_probes = everything[: len(ages)], everything[len(ages):]
    threshold = profile.tone.standing_rule_salience

    plot_w, plot_h = PLOT_W - LEFT - RIGHT, PLOT_H - TOP - BOTTOM

    def x(age: float) -> float:
        return LEFT + (age / span) * plot_w

    def y(value: float) -> float:
        return TOP + (1.0 - min(max(value, 0.0), 1.0)) * plot_h

    svg = [
        f'<svg class="salience-plot" viewBox="0 0 {PLOT_W} {PLOT_H}" width="100%" role="img" '
        f'aria-label="salience of an emotional trace over time" data-memory="{_e(memory.memory_id)}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        svg.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for age, label in _time_ticks(span):
        svg.append(f'<line class="axis" x1="{x(age):.1f}" x2="{x(age):.1f}" y1="{TOP + plot_h}" '
                   f'y2="{TOP + plot_h + 4}"/>')
        svg.append(f'<text x="{x(age):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{_e(label)}</text>')
    svg.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    svg.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}"/>')
    svg.append(f'<text x="{LEFT + plot_w}" y="{PLOT_H - 4}" text-anchor="end">time since it was said</text>')
    svg.append(f'<text x="12" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 12 {TOP + plot_h / 2:.1f})">salience</text>')
    points = " ".join(f"{x(float(a)):.1f},{y(float(s)):.1f}" for a, s in zip(ages, curve, strict=True))
    svg.append(f'<polygon class="area" points="{x(0):.1f},{y(0):.1f} {points} {x(span):.1f},{y(0):.1f}"/>')
    svg.append(f'<polyline class="curve" points="{points}"/>')
    svg.append(f'<line class="threshold" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(threshold):.1f}" '
               f'y2="{y(threshold):.1f}"><title>standing-rule threshold {threshold:g}</title></line>')
    svg.append(f'<text class="threshold-label" x="{LEFT + plot_w - 4}" y="{y(threshold) - 4:.1f}" '
               f'text-anchor="end">standing-rule threshold {threshold:g}</text>')
    notes = []
    label_x, label_row = -1e9, 0
    for (index, result, age), value in zip(later, at_probes, strict=True):
        label = _probe_label(index)
        # Probes seconds apart share an x: their labels step down instead of overprinting.
        label_row = label_row + 1 if x(age) - label_x < 24 else 0
        label_x = x(age)
        at_edge = label_x > LEFT + plot_w - 24
        role = _role_at(memory.memory_id, result.recall)
        note = f"{label} at {_when(result.query.at)} ({_duration(age)} later): salience {value:.3f}; {role}"
        notes.append(f"<li>{_e(note)}</li>")
        svg.append(
            f'<g class="probe-marker" data-probe="{label}"><title>{_e(note)}</title>'
            f'<line class="probe-line" x1="{x(age):.1f}" x2="{x(age):.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
            f'<circle class="probe-dot" cx="{x(age):.1f}" cy="{y(float(value)):.1f}" r="3.5"/>'
            f'<text class="probe-label" x="{x(age) + (-3 if at_edge else 3):.1f}" y="{TOP + 10 + 12 * label_row}" '
            f'text-anchor="{"end" if at_edge else "start"}">{label}</text></g>'
        )
    svg.append("</svg>")
    if earlier:
        notes.append(f"<li>{', '.join(_probe_label(i) for i in earlier)} came before it was said.</li>")
    return (
        f'<figure class="trace-plot">{"".join(svg)}<figcaption>'
        f'<q>{_e(memory.text)}</q> <span class="muted">said {_e(_when(said))}</span><br>'
        f"{_e(_trace_line(trace))} · half-life {_duration(float(half_lives[0]))} · "
        f"{_e(_tone_verdict(trace, profile, ages, curve, said))}"
        f'<ul class="muted">{"".join(notes)}</ul></figcaption></figure>'
    )


def _time_ticks(span: float) -> list[tuple[float, str]]:
    """About six evenly spaced ticks in round hours or days."""
    steps: tuple[int, ...]
    if span <= 2:
        unit, name, steps = 1 / 24, "h", (1, 2, 3, 6, 12)
    else:
        unit, name, steps = 1.0, "d", (1, 2, 5, 7, 10, 14, 30, 60, 90, 180, 365, 730, 1825, 3650)
    units = span / unit
    step: float = next((s for s in steps if units / s <= 8), units / 6)
    ticks = []
    value = 0.0
    while value <= units + 1e-9:
        ticks.append((value * unit, f"{value:g} {name}"))
        value += step
    return ticks


def _role_at(memory_id: str, recall: RecallResult) -> str:
    """What the memory was to the probe: recalled (and where), part of a tone constraint, or absent."""
    roles = []
    for rank, recalled in enumerate(recall.memories, start=1):
        if recalled.memory_id == memory_id:
            roles.append(f"recalled #{rank}")
    if any(memory_id in c.source_memory_ids for c in recall.tone_constraints):
        roles.append("behind a tone constraint of this turn")
    if any(memory_id in c.source_memory_ids for c in recall.standing_rules):
        roles.append("behind a standing rule")
    roles += [r.note for r in recall.resolutions if r.memory_id == memory_id]
    return ", ".join(roles) or "not recalled, no rule"


def _trace_line(trace: Trace) -> str:
    anchors = ", ".join(trace.anchors) or "none"
    return (f"{trace.register}, intensity {trace.intensity:.2f}, valence {trace.valence:+.2f}, "
            f"anchors: {anchors}")


def _tone_verdict(trace: Trace, profile: TuningProfile, ages: F64, curve: F64, said: datetime) -> str:
    tone = profile.tone
    if trace.intensity < tone.min_intensity or trace.valence > tone.max_valence:
        return (f"no tone rule (needs intensity ≥ {tone.min_intensity:g} and valence ≤ {tone.max_valence:+g}), "
                "so it never becomes a standing rule")
    below = np.flatnonzero(curve < tone.standing_rule_salience)
    if not len(below):
        return "carries a tone rule; stays above the standing-rule threshold over the whole timeline"
    age = float(ages[below[0]])
    when = _when(said + timedelta(days=age))
    bar = standing_bar(profile, trace.register)
    if trace.intensity < bar:
        need = "never stands" if bar == float("inf") else f"stands from intensity {bar:g}"
        return (f"carries a tone rule; decays out of force from about {_duration(age)} on ({when}): "
                f"{trace.register} {need}")
    return f"carries a tone rule; below the standing-rule threshold from about {_duration(age)} on ({when})"


# ------------------------------------------------------------------------------------------------------------
# One probe


def _probe_section(run: TranscriptRun, index: int, result: ProbeResult) -> str:
    recall = result.recall
    turn = run.transcript.sessions[result.session].turns[result.turn]
    state = "pass" if result.passed else "fail"
    head = (
        f"<h3>{_badge(result.passed)} {_probe_label(index)} · sessions[{result.session}].turns[{result.turn}] · "
        f'{_e(_when(result.query.at))} <span class="muted mono">{_e(result.file)}:{result.line}</span></h3>'
        f'<div class="message">{_e(result.query.message)}</div>'
    )
    checks = f'<div class="checks"><b>checks</b> {_e(_checks(turn.probe))}</div>' if turn.probe else ""
    failures = (
        '<ul class="failures">' + "".join(f"<li>{_e(failure)}</li>" for failure in result.failures) + "</ul>"
        if result.failures
        else ""
    )
    trace = recall.trace
    memories = (
        f"<h4>Recalled memories ({len(recall.memories)}) · mode {_e(trace.mode)} · "
        f"fused candidates: {trace.fused_candidates} · below the floor: {trace.dropped_below_floor}</h4>"
        + (
            BAR_SCALE_NOTE + '<ol class="memories">'
            + "".join(_memory_card(m, rank) for rank, m in enumerate(recall.memories, start=1)) + "</ol>"
            if recall.memories
            else '<p class="muted">Nothing was recalled.</p>'
        )
    )
    notes = "".join(f'<p class="muted">note: {_e(note)}</p>' for note in trace.notes)
    return (
        f'<section class="probe {state}" id="{_e(_anchor(run))}-p{index + 1}">'
        f"{head}{checks}{failures}{memories}{notes}{_tone(recall)}{_context(recall)}</section>"
    )


def _checks(probe: Probe) -> str:
    parts = []
    for index, tone in enumerate(probe.tone):
        wants = []
        if tone.register_any is not None:
            wants.append("register " + " or ".join(tone.register_any))
        if tone.anchors_any is not None:
            wants.append("naming " + " or ".join(tone.anchors_any))
        parts.append(f"tone[{index}]: {', '.join(wants) or 'any constraint'}")
    if probe.no_tone == "any":
        parts.append("no_tone: any")
    elif probe.no_tone is not None:
        parts.append("no_tone: " + ", ".join(probe.no_tone))
    for name in ("recall_any", "recall_all", "recall_none", "context_any", "context_none"):
        values: tuple[str, ...] = getattr(probe, name)
        if values:
            parts.append(f"{name}: " + ", ".join(repr(value) for value in values))
    return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class Bar:
    """How a component's bar is drawn: ``width_percent`` of its span (the whole bar for relevance and the score,
    one half for a multiplier), which way from the centre line, and whether the value lies beyond the scale."""

    width_percent: float
    direction: Literal["up", "down", "none"]
    clipped: bool


def bar_for(name: str, value: float) -> Bar:
    """The bar of one score component: a multiplier's effect on a log scale from the centre line (a half-bar is
    ``EFFECT_HALF_SCALE``), anything else on 0 to 1."""
    if name not in MULTIPLIERS:
        return Bar(100.0 * min(max(value, 0.0), 1.0), "up" if value > 0 else "none", not 0.0 <= value <= 1.0)
    if value <= 0.0:
        return Bar(100.0, "down", True)  # a zero weight removes the memory: beyond any penalty on the scale
    effect = math.log(value) / math.log(EFFECT_HALF_SCALE)
    direction: Literal["up", "down", "none"] = "up" if effect > 0 else "down" if effect < 0 else "none"
    return Bar(100.0 * min(abs(effect), 1.0), direction, abs(effect) > 1.0)


def _bar_title(name: str, label: str, value: float, bar: Bar) -> str:
    beyond = ", off the scale" if bar.clipped else ""
    if name not in MULTIPLIERS:
        return f"{label} = {value!r} (bar: 0 to 1, full width = 1{beyond})"
    effect = {"up": "a boost", "down": "a penalty", "none": "no effect"}[bar.direction]
    return (f"{label} = {value!r}: ×{value:.3f} on the score, {effect} (bar: log scale from the centre line, "
            f"a half-bar = ×{EFFECT_HALF_SCALE:g}{beyond})")


def component_bars(components: ScoreComponents) -> str:
    """One row per component: its label, its bar (``bar_for``) and its value; the title gives the exact value."""
    rows = []
    for name, label in COMPONENTS:
        value = float(getattr(components, name))
        bar = bar_for(name, value)
        fill = (f'<span class="fill {name}{" clipped" if bar.clipped else ""}" data-direction="{bar.direction}" '
                f'style="width:{bar.width_percent:.1f}%"></span>')
        if name in MULTIPLIERS:
            down, up = (fill, "") if bar.direction == "down" else ("", fill)
            drawn = (f'<span class="bar effect"><span class="half down">{down}</span>'
                     f'<span class="half up">{up}</span></span>')
        else:
            drawn = f'<span class="bar linear">{fill}</span>'
        rows.append(
            f'<div class="bar-row" data-component="{name}" data-scale="{"effect" if name in MULTIPLIERS else "linear"}"'
            f' title="{_e(_bar_title(name, label, value, bar))}"><span>{label}</span>{drawn}'
            f'<span class="bar-value">{_n(value)}</span></div>'
        )
    return '<div class="bars">' + "".join(rows) + "</div>"


def _memory_card(memory: RecalledMemory, rank: int) -> str:
    c = memory.components
    tags = [f'<span class="tag">{_e(memory.scope)}</span>', f'<span class="tag">{_e(memory.kind)}</span>']
    if memory.stale:
        tags.append('<span class="tag stale">stale</span>')
    legs = "+".join(leg.value for leg in memory.legs) or "no legs"
    trace = memory.trace
    feeling = "no trace" if trace is None else f"{trace.kind.value} · {_trace_line(trace)}"
    if trace is not None and trace.status is not TraceStatus.COMPLETE:
        feeling = f"trace {trace.status.value}"
    matched = f" · matched anchors: {', '.join(memory.matched_anchors)}" if memory.matched_anchors else ""
    return (
        f'<li class="memory" data-memory="{_e(memory.memory_id)}">'
        f'<div><span class="rank">{rank}.</span><span class="text">{_e(memory.text)}</span></div>'
        f'<div class="meta">{"".join(tags)} age {_duration(c.age_days)} · legs {_e(legs)} · '
        f"stale {'yes' if memory.stale else 'no'} · {_e(memory.session_id)}<br>{_e(feeling)}{_e(matched)}<br>"
        f"salience {_n(c.salience)} (half-life {_duration(c.half_life_days)}) → weight {_n(c.salience_weight)}</div>"
        f"{component_bars(c)}</li>"
    )


def _tone(recall: RecallResult) -> str:
    rows = [_constraint_row(c) for c in (*recall.tone_constraints, *recall.standing_rules)]
    resolved = "".join(
        f'<li><span class="tag">resolved</span> {_e(r.register)} memory <span class="mono">{_e(r.memory_id)}</span>: '
        f"{_e(r.note)} ({_e(r.link)})</li>" for r in recall.resolutions
    )
    resolved = f'<p class="muted">Out of tone force, resolved:</p><ul>{resolved}</ul>' if resolved else ""
    if not rows:
        return f'<h4>Tone in force</h4><p class="muted">No tone constraint and no standing rule.</p>{resolved}'
    return (
        f"<h4>Tone in force: {len(recall.tone_constraints)} constraints, {len(recall.standing_rules)} standing rules"
        "</h4><table><tr><th>kind</th><th>register</th><th>anchors</th><th>intensity</th><th>valence</th>"
        "<th>instruction</th></tr>" + "".join(rows) + "</table>" + resolved
    )


def _constraint_row(constraint: ToneConstraint) -> str:
    kind = '<span class="tag standing">standing rule</span>' if constraint.standing else "this turn"
    return (
        f"<tr><td>{kind}</td><td>{_e(constraint.register)}</td><td>{_e(', '.join(constraint.anchors))}</td>"
        f"<td>{constraint.intensity:.2f}</td><td>{constraint.valence:+.2f}</td>"
        f"<td>{_e(constraint.instruction)}</td></tr>"
    )


def _context(recall: RecallResult) -> str:
    context = recall.context
    tokens = recall.trace.context
    counts = {} if tokens is None else {"prefix": tokens.prefix_tokens, "tone": tokens.tone_tokens,
                                        "tail": tokens.tail_tokens}
    parts = []
    for name, text in (("prefix", context.prefix), ("tone", context.tone), ("tail", context.tail)):
        size = f" · {counts[name]} tokens" if name in counts else ""
        parts.append(f"<h4>{name}{size}</h4><pre>{_e(text) or '(empty)'}</pre>")
    budget = "" if tokens is None else f" · budget {tokens.budget_tokens} tokens"
    return f"<details><summary>Assembled context (prefix / tone / tail{budget})</summary>{''.join(parts)}</details>"
