"""The HTML report's salience plots (``eval.report``): each emotional trace's salience over the transcript's
timeline, computed with the scorer's own function and the character's profile, as inline SVG."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from engine.domain.models import (
    Memory,
    MemoryKind,
    RecallResult,
    Trace,
)
from engine.domain.tuning import TuningProfile
from engine.recall import standing_bar
from engine.strength import stage_two_params
from eval.report_markup import F64, SECONDS_PER_DAY, duration, esc, probe_label, trace_line, when_text
from eval.transcripts import TranscriptRun
from scoring.rerank import salience_for

MIN_PLOT_DAYS = 1.0
"""A trace said just before the last probe still gets a day of curve, so its decay is visible."""
MAX_SAMPLES = 2000

# Plot geometry, in SVG user units.
PLOT_W, PLOT_H = 760, 230
LEFT, RIGHT, TOP, BOTTOM = 46, 18, 14, 36


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


def trace_plots(run: TranscriptRun) -> str:
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
        f'aria-label="salience of an emotional trace over time" data-memory="{esc(memory.memory_id)}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        svg.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for age, label in _time_ticks(span):
        svg.append(f'<line class="axis" x1="{x(age):.1f}" x2="{x(age):.1f}" y1="{TOP + plot_h}" '
                   f'y2="{TOP + plot_h + 4}"/>')
        svg.append(f'<text x="{x(age):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{esc(label)}</text>')
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
        label = probe_label(index)
        # Probes seconds apart share an x: their labels step down instead of overprinting.
        label_row = label_row + 1 if x(age) - label_x < 24 else 0
        label_x = x(age)
        at_edge = label_x > LEFT + plot_w - 24
        role = _role_at(memory.memory_id, result.recall)
        note = f"{label} at {when_text(result.query.at)} ({duration(age)} later): salience {value:.3f}; {role}"
        notes.append(f"<li>{esc(note)}</li>")
        svg.append(
            f'<g class="probe-marker" data-probe="{label}"><title>{esc(note)}</title>'
            f'<line class="probe-line" x1="{x(age):.1f}" x2="{x(age):.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
            f'<circle class="probe-dot" cx="{x(age):.1f}" cy="{y(float(value)):.1f}" r="3.5"/>'
            f'<text class="probe-label" x="{x(age) + (-3 if at_edge else 3):.1f}" y="{TOP + 10 + 12 * label_row}" '
            f'text-anchor="{"end" if at_edge else "start"}">{label}</text></g>'
        )
    svg.append("</svg>")
    if earlier:
        notes.append(f"<li>{', '.join(probe_label(i) for i in earlier)} came before it was said.</li>")
    return (
        f'<figure class="trace-plot">{"".join(svg)}<figcaption>'
        f'<q>{esc(memory.text)}</q> <span class="muted">said {esc(when_text(said))}</span><br>'
        f"{esc(trace_line(trace))} · half-life {duration(float(half_lives[0]))} · "
        f"{esc(_tone_verdict(trace, profile, ages, curve, said))}"
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


def _tone_verdict(trace: Trace, profile: TuningProfile, ages: F64, curve: F64, said: datetime) -> str:
    tone = profile.tone
    if trace.intensity < tone.min_intensity or trace.valence > tone.max_valence:
        return (f"no tone rule (needs intensity ≥ {tone.min_intensity:g} and valence ≤ {tone.max_valence:+g}), "
                "so it never becomes a standing rule")
    below = np.flatnonzero(curve < tone.standing_rule_salience)
    if not len(below):
        return "carries a tone rule; stays above the standing-rule threshold over the whole timeline"
    age = float(ages[below[0]])
    when = when_text(said + timedelta(days=age))
    bar = standing_bar(profile, trace.register)
    if trace.intensity < bar:
        need = "never stands" if bar == float("inf") else f"stands from intensity {bar:g}"
        return (f"carries a tone rule; decays out of force from about {duration(age)} on ({when}): "
                f"{trace.register} {need}")
    return f"carries a tone rule; below the standing-rule threshold from about {duration(age)} on ({when})"
