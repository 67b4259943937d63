"""The HTML report of ``feltsense eval run --html``: one page that shows why each probe passed or failed.

The page is self-contained because it is passed around and opened from disk: inline CSS and SVG, no script,
nothing fetched (inline SVG in HTML needs no namespace URL, so the page names no address at all). Every string
from a transcript or the engine is escaped. The salience curves are computed with the scorer's own function
(``scoring.rerank.salience_for``) and the character's profile, so a plot shows what ranking saw. Every bar has
one fixed scale, stated on the page: relevance and the score on 0 to 1, a multiplier as its effect on the score
(``MULTIPLIERS``), so no bar depends on what else the page holds.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.report_markup import anchor, badge, esc, probe_label, when_text
from eval.report_probe import (
    BAR_SCALE_NOTE,
    COMPONENTS,
    EFFECT_HALF_SCALE,
    MULTIPLIERS,
    Bar,
    bar_for,
    component_bars,
    probe_section,
)
from eval.report_salience import emotional_traces, salience_series, sample_ages, trace_plots
from eval.transcripts import RunReport, TranscriptRun

__all__ = [  # the probe sections (eval.report_probe) and the plots (eval.report_salience) are read from here too
    "BAR_SCALE_NOTE", "COMPONENTS", "CSS", "EFFECT_HALF_SCALE", "MULTIPLIERS", "Bar", "bar_for", "component_bars",
    "emotional_traces", "render_html", "salience_series", "sample_ages", "write_html",
]

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
            f"<tr><td>{badge(run.passed)}</td>"
            f'<td><a href="#{esc(anchor(run))}">{esc(run.transcript.id)}</a></td>'
            f"<td class=\"mono\">{esc(run.transcript.file)}</td>"
            f"<td>{len(run.results) - failed} / {len(run.results)}</td>"
            f"<td>{esc(run.transcript.description.strip())}</td></tr>"
        )
    table = (
        "<table><tr><th></th><th>transcript</th><th>file</th><th>probes passed</th><th>description</th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else ""
    )
    return f'<section class="summary">{stats}{table}</section>'


# ------------------------------------------------------------------------------------------------------------
# One transcript


def _transcript_section(run: TranscriptRun) -> str:
    transcript = run.transcript
    head = (
        f'<header><h2>{badge(run.passed)} {esc(transcript.id)}</h2>'
        f'<div class="muted"><span class="mono">{esc(transcript.file)}</span> · character '
        f"<b>{esc(transcript.character)}</b> · user <b>{esc(transcript.user)}</b> · "
        f"{len(transcript.sessions)} sessions · {len(run.results)} probes</div>"
        + (f"<p>{esc(transcript.description.strip())}</p>" if transcript.description.strip() else "")
        + "</header>"
    )
    parts = [head, _conversation(run), trace_plots(run)]
    parts.extend(probe_section(run, index, result) for index, result in enumerate(run.results))
    return f'<section class="transcript" id="{esc(anchor(run))}">' + "".join(parts) + "</section>"


def _conversation(run: TranscriptRun) -> str:
    """The transcript as replayed, collapsed: every turn with its time, the probes marked."""
    probe_at = {(result.session, result.turn): index for index, result in enumerate(run.results)}
    rows = []
    for session in run.transcript.sessions:
        rows.append(f'<tr><th colspan="3">session {session.index} · {esc(when_text(session.start))}</th></tr>')
        for turn in session.turns:
            index = probe_at.get((session.index, turn.index))
            mark = "" if index is None else f' <span class="tag">{probe_label(index)}</span>'
            css = ' class="probe-turn"' if index is not None else ""
            rows.append(
                f'<tr{css}><td class="when">{esc(when_text(turn.at))}</td><td class="role">{esc(turn.role)}{mark}</td>'
                f"<td>{esc(turn.text)}</td></tr>"
            )
    return (
        f"<details><summary>The transcript ({sum(len(s.turns) for s in run.transcript.sessions)} turns)</summary>"
        f'<table class="convo">{"".join(rows)}</table></details>'
    )
