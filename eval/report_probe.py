"""The HTML report's probe sections (``eval.report``): each probe's checks, the memories recall returned with their
score components as bars on fixed scales, the tone and the context."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from engine.domain.models import (
    RecalledMemory,
    RecallResult,
    ScoreComponents,
    ToneConstraint,
    TraceStatus,
)
from engine.transcripts.model import Probe
from engine.transcripts.replay import ProbeResult
from eval.report_markup import anchor, badge, duration, esc, num, probe_label, trace_line, when_text
from eval.transcripts import TranscriptRun

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


# ------------------------------------------------------------------------------------------------------------
# One probe


def probe_section(run: TranscriptRun, index: int, result: ProbeResult) -> str:
    recall = result.recall
    turn = run.transcript.sessions[result.session].turns[result.turn]
    state = "pass" if result.passed else "fail"
    head = (
        f"<h3>{badge(result.passed)} {probe_label(index)} · sessions[{result.session}].turns[{result.turn}] · "
        f'{esc(when_text(result.query.at))} <span class="muted mono">{esc(result.file)}:{result.line}</span></h3>'
        f'<div class="message">{esc(result.query.message)}</div>'
    )
    checks = f'<div class="checks"><b>checks</b> {esc(_checks(turn.probe))}</div>' if turn.probe else ""
    failures = (
        '<ul class="failures">' + "".join(f"<li>{esc(failure)}</li>" for failure in result.failures) + "</ul>"
        if result.failures
        else ""
    )
    trace = recall.trace
    memories = (
        f"<h4>Recalled memories ({len(recall.memories)}) · mode {esc(trace.mode)} · "
        f"fused candidates: {trace.fused_candidates} · below the floor: {trace.dropped_below_floor}</h4>"
        + (
            BAR_SCALE_NOTE + '<ol class="memories">'
            + "".join(_memory_card(m, rank) for rank, m in enumerate(recall.memories, start=1)) + "</ol>"
            if recall.memories
            else '<p class="muted">Nothing was recalled.</p>'
        )
    )
    notes = "".join(f'<p class="muted">note: {esc(note)}</p>' for note in trace.notes)
    return (
        f'<section class="probe {state}" id="{esc(anchor(run))}-p{index + 1}">'
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
            f' title="{esc(_bar_title(name, label, value, bar))}"><span>{label}</span>{drawn}'
            f'<span class="bar-value">{num(value)}</span></div>'
        )
    return '<div class="bars">' + "".join(rows) + "</div>"


def _memory_card(memory: RecalledMemory, rank: int) -> str:
    c = memory.components
    tags = [f'<span class="tag">{esc(memory.scope)}</span>', f'<span class="tag">{esc(memory.kind)}</span>']
    if memory.stale:
        tags.append('<span class="tag stale">stale</span>')
    legs = "+".join(leg.value for leg in memory.legs) or "no legs"
    trace = memory.trace
    feeling = "no trace" if trace is None else f"{trace.kind.value} · {trace_line(trace)}"
    if trace is not None and trace.status is not TraceStatus.COMPLETE:
        feeling = f"trace {trace.status.value}"
    matched = f" · matched anchors: {', '.join(memory.matched_anchors)}" if memory.matched_anchors else ""
    return (
        f'<li class="memory" data-memory="{esc(memory.memory_id)}">'
        f'<div><span class="rank">{rank}.</span><span class="text">{esc(memory.text)}</span></div>'
        f'<div class="meta">{"".join(tags)} age {duration(c.age_days)} · legs {esc(legs)} · '
        f"stale {'yes' if memory.stale else 'no'} · {esc(memory.session_id)}<br>{esc(feeling)}{esc(matched)}<br>"
        f"salience {num(c.salience)} (half-life {duration(c.half_life_days)}) → weight {num(c.salience_weight)}</div>"
        f"{component_bars(c)}</li>"
    )


def _tone(recall: RecallResult) -> str:
    rows = [_constraint_row(c) for c in (*recall.tone_constraints, *recall.standing_rules)]
    resolved = "".join(
        f'<li><span class="tag">resolved</span> {esc(r.register)} memory <span class="mono">{esc(r.memory_id)}</span>: '
        f"{esc(r.note)} ({esc(r.link)})</li>" for r in recall.resolutions
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
        f"<tr><td>{kind}</td><td>{esc(constraint.register)}</td><td>{esc(', '.join(constraint.anchors))}</td>"
        f"<td>{constraint.intensity:.2f}</td><td>{constraint.valence:+.2f}</td>"
        f"<td>{esc(constraint.instruction)}</td></tr>"
    )


def _context(recall: RecallResult) -> str:
    context = recall.context
    tokens = recall.trace.context
    counts = {} if tokens is None else {"prefix": tokens.prefix_tokens, "tone": tokens.tone_tokens,
                                        "tail": tokens.tail_tokens}
    parts = []
    for name, text in (("prefix", context.prefix), ("tone", context.tone), ("tail", context.tail)):
        size = f" · {counts[name]} tokens" if name in counts else ""
        parts.append(f"<h4>{name}{size}</h4><pre>{esc(text) or '(empty)'}</pre>")
    budget = "" if tokens is None else f" · budget {tokens.budget_tokens} tokens"
    return f"<details><summary>Assembled context (prefix / tone / tail{budget})</summary>{''.join(parts)}</details>"
