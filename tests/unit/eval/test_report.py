"""The HTML report of ``eval run --html``, on the fast hashing engine (no model loads here).

The page is parsed with the standard library's HTML parser, so the checks are on real elements and attributes:
escaped user text that merely looks like a tag (``&lt;img src=...&gt;``) is text, not an element.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from engine.adapters.hashing_embedder import HashingEmbedder
from engine.domain.models import (
    AssembledContext,
    CloseReport,
    IngestReport,
    RecallQuery,
    RecallResult,
    RecallTrace,
    Turn,
)
from engine.domain.tuning import TuningProfile
from engine.service import Engine
from engine.transcripts.format import parse_transcript
from engine.transcripts.model import Transcript
from eval.cli import main
from eval.report import COMPONENTS, emotional_traces, render_html, salience_series, sample_ages
from eval.transcripts import RunReport, run_transcripts
from tests.fakes import hashing_engine_in

LUNA = """\
format: 1
id: luna
character: ava
user: tester-1
description: A grief exchange, then a walk nine days later, then a year later.
sessions:
  - at: "2025-03-02T18:00:00Z"
    turns:
      - user: "My dog Luna died last week."
      - character: "I'm so sorry."
      - user: "Luna and I walked in the park every single morning."
      - user: "I just miss her so much."
  - at: "+9d"
    turns:
      - user: "I went for a walk in the park with Luna's old lead."
        probe:
          recall_any: [Luna]
  - at: "+365d"
    turns:
      - user: "Thinking about a puppy this spring."
        probe:
          tone:
            - register_any: [grief]
              anchors_any: [Luna]
          recall_none: [puppy]
"""

SCRIPT = '<script>alert("x")</script> & <img src=http://example.com/pixel.png onerror=alert(1)>'
EVIL = f"""\
format: 1
id: evil
character: ava
user: tester-9
description: '{SCRIPT}'
sessions:
  - at: "2025-04-01T10:00:00Z"
    turns:
      - user: '{SCRIPT} My cat died.'
  - at: "+2d"
    turns:
      - user: '{SCRIPT} still here'
        probe:
          recall_any: ['<script>']
          context_any: ['words no context holds']
"""


def hashing_factory() -> Callable[[Path], Engine]:
    """Real engines on the hashing embedder and keyword classifier: fast, and they keep memories and traces."""
    embedder = HashingEmbedder()

    def factory(data_dir: Path) -> Engine:
        return hashing_engine_in(data_dir, embedder)

    return factory


def transcripts() -> list[Transcript]:
    return [parse_transcript(LUNA, file="luna.yaml"), parse_transcript(EVIL, file="evil.yaml")]


@pytest.fixture(scope="module")
def report() -> RunReport:
    return run_transcripts(transcripts(), engine_factory=hashing_factory())


@pytest.fixture(scope="module")
def page(report: RunReport) -> str:
    return render_html(report)


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.nodes: list[Element | str] = []

    @property
    def children(self) -> list[Element]:
        return [node for node in self.nodes if isinstance(node, Element)]

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def all(self, tag: str | None = None, css: str | None = None) -> list[Element]:
        found = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (css is None or css in child.classes):
                found.append(child)
            found.extend(child.all(tag, css))
        return found

    def content(self) -> str:
        return "".join(node if isinstance(node, str) else node.content() for node in self.nodes)


VOID = {"meta", "br", "img", "input", "link", "hr", "wbr", "source", "area", "base", "col", "embed", "track"}


class Tree(HTMLParser):
    """Just enough of a DOM to find elements by tag and class and read their attributes and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs), self.current)
        self.current.nodes.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.nodes.append(Element(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.nodes.append(data)


def parse(page: str) -> Element:
    tree = Tree()
    tree.feed(page)
    tree.close()
    return tree.root


def assert_self_contained(page: str) -> None:
    root = parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert not root.all("script") and not root.all("link") and not root.all("img") and not root.all("iframe")
    for element in root.all():
        for name, value in element.attrs.items():
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
                assert value is not None and not re.match(r"^\s*[a-z][a-z0-9+.-]*:", value, re.I), (name, value)
                assert not value.startswith("//"), (name, value)
            assert not name.startswith("on"), name
    for style in root.all("style"):
        assert "url(" not in style.content() and "@import" not in style.content()


# -- the page -----------------------------------------------------------------------------------------------


def test_the_cli_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)
    path = tmp_path / "report.html"

    status = main(["eval", "run", str(tmp_path), "--html", str(path)], engine_factory=hashing_factory())

    out = capsys.readouterr().out
    assert status in (0, 1), out
    page = path.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "http://" not in page and "https://" not in page
    assert len(parse(page).all("section", "probe")) == 2


def test_an_unwritable_page_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "luna.yaml").write_text(LUNA)

    status = main(
        ["eval", "run", str(tmp_path / "luna.yaml"), "--html", str(tmp_path / "missing" / "report.html")],
        engine_factory=hashing_factory(),
    )

    assert status == 3
    assert "cannot write" in capsys.readouterr().err


def test_the_page_fetches_nothing_and_runs_nothing(page: str) -> None:
    assert_self_contained(page)


def test_the_summary_counts_transcripts_and_probes_and_gives_each_transcripts_verdict(
    report: RunReport, page: str
) -> None:
    summary = parse(page).all("section", "summary")[0]
    stats = [stat.content() for stat in summary.all("div", "stat")]
    assert stats == [
        f"{report.transcripts}transcripts",
        f"{len(report.results)}probes",
        f"{report.passed}passed",
        f"{report.failed}failed",
    ]
    rows = summary.all("tr")[1:]
    assert [row.all("a")[0].content() for row in rows] == ["luna", "evil"]
    for row, run in zip(rows, report.runs, strict=True):
        assert row.all("span", "badge")[0].content() == ("PASS" if run.passed else "FAIL")
        assert row.all("a")[0].attrs["href"] == "#t-" + run.transcript.id


def test_every_probe_shows_its_message_time_verdict_and_failure_reasons(report: RunReport, page: str) -> None:
    probes = parse(page).all("section", "probe")
    assert len(probes) == len(report.results) == 3
    for section, result in zip(probes, report.results, strict=True):
        assert ("pass" if result.passed else "fail") in section.classes
        assert section.all("div", "message")[0].content() == result.query.message
        assert result.query.at is not None
        assert result.query.at.strftime("%Y-%m-%d %H:%M:%S UTC") in section.content()


def test_a_failed_probe_lists_its_reasons(report: RunReport, page: str) -> None:
    # The "evil" probe asks the context for words it cannot hold.
    failed = [result for result in report.results if not result.passed]
    assert failed, "expected at least one failing probe to show its reasons"
    probes = parse(page).all("section", "probe")
    for section, result in zip(probes, report.results, strict=True):
        reasons = section.all("ul", "failures")
        if result.passed:
            assert not reasons
        else:
            assert [li.content() for li in reasons[0].all("li")] == list(result.failures)


def test_each_recalled_memory_has_a_bar_per_score_component(report: RunReport, page: str) -> None:
    cards = parse(page).all("li", "memory")
    recalled = [memory for result in report.results for memory in result.recall.memories]
    assert len(cards) == len(recalled) > 0
    for card, memory in zip(cards, recalled, strict=True):
        assert card.all("span", "text")[0].content() == memory.text
        rows = card.all("div", "bar-row")
        assert [row.attrs["data-component"] for row in rows] == [name for name, _ in COMPONENTS]
        for row, (name, _) in zip(rows, COMPONENTS, strict=True):
            fill = row.all("span", "fill")[0]
            width = re.fullmatch(r"width:([\d.]+)%", fill.attrs["style"] or "")
            assert width is not None and 0.0 <= float(width[1]) <= 100.0
            assert row.all("span", "bar-value")[0].content() == f"{getattr(memory.components, name):.3f}"
        meta = card.all("div", "meta")[0].content()
        assert memory.scope in meta and memory.kind in meta and "legs " in meta and "stale " in meta


def test_tone_constraints_and_standing_rules_are_shown(report: RunReport, page: str) -> None:
    year_later = report.results[1]
    in_force = year_later.recall.tone_in_force
    assert in_force, "a year after the grief, a standing rule should be in force"
    section = parse(page).all("section", "probe")[1]
    text = section.content()
    for constraint in in_force:
        assert constraint.instruction in text and constraint.register in text
        assert ", ".join(constraint.anchors) in text
    assert any(c.standing for c in in_force) == bool(section.all("span", "standing"))


def test_the_assembled_context_is_collapsible(report: RunReport, page: str) -> None:
    for section, result in zip(parse(page).all("section", "probe"), report.results, strict=True):
        details = [d for d in section.all("details") if "Assembled context" in d.all("summary")[0].content()]
        assert len(details) == 1
        shown = [pre.content() for pre in details[0].all("pre")]
        context = result.recall.context
        assert shown == [text or "(empty)" for text in (context.prefix, context.tone, context.tail)]


def test_one_salience_plot_per_emotional_trace_with_the_probes_marked(report: RunReport, page: str) -> None:
    root = parse(page)
    for run, section in zip(report.runs, root.all("section", "transcript"), strict=True):
        traced = emotional_traces(run)
        plots = section.all("svg", "salience-plot")
        assert [plot.attrs["data-memory"] for plot in plots] == [memory.memory_id for memory, _ in traced]
        for plot, (memory, _) in zip(plots, traced, strict=True):
            after = [i for i, r in enumerate(run.results) if r.query.at is not None and r.query.at >= memory.created_at]
            assert [g.attrs["data-probe"] for g in plot.all("g", "probe-marker")] == [f"P{i + 1}" for i in after]
            assert all(g.all("line", "probe-line") for g in plot.all("g", "probe-marker"))
            assert len(plot.all("line", "threshold")) == 1
            assert len(plot.all("polyline", "curve")) == 1
    luna = report.runs[0]
    assert len(emotional_traces(luna)) >= 2  # "died" and "miss her": grief


def test_the_standing_rule_threshold_sits_at_the_profiles_value(report: RunReport, page: str) -> None:
    plot = parse(page).all("svg", "salience-plot")[0]
    threshold = plot.all("line", "threshold")[0]
    y1 = float(threshold.attrs["y1"] or 0)
    top, bottom = 14, 230 - 36
    expected = top + (1 - TuningProfile().tone.standing_rule_salience) * (bottom - top)
    assert abs(y1 - expected) < 0.1


def test_the_plotted_salience_is_what_ranking_saw(report: RunReport) -> None:
    """Where a probe recalled an emotional memory, the curve at that age equals the scorer's own salience."""
    run = report.runs[0]
    checked = 0
    traces = {memory.memory_id: trace for memory, trace in emotional_traces(run)}
    for result in run.results:
        for memory in result.recall.memories:
            if memory.memory_id in traces:
                (value,), _ = salience_series(traces[memory.memory_id], [memory.components.age_days], TuningProfile())
                assert value == pytest.approx(memory.components.salience)
                checked += 1
    assert checked > 0


def test_samples_are_hourly_over_a_month_and_daily_beyond() -> None:
    hourly = sample_ages(2.0)
    assert hourly[0] == 0 and hourly[-1] == 2.0 and np.allclose(np.diff(hourly[:-1]), 1 / 24)
    daily = sample_ages(374.0)
    assert daily[-1] == 374.0 and np.allclose(np.diff(daily[:-1]), 1.0)
    assert len(sample_ages(1e6)) <= 2001


def test_user_text_is_escaped_everywhere(page: str) -> None:
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    root = parse(page)
    assert not root.all("img")
    evil = root.all("section", "transcript")[1]
    # Escaped in the description, the conversation, the probe's message and checks, the memories and the context.
    assert evil.content().count('<script>alert("x")</script>') >= 4
    assert evil.all("div", "message")[0].content() == f"{SCRIPT} still here"


# -- without the engine's memories ---------------------------------------------------------------------------


class BareEngine:
    """An engine that offers only what replay needs: the page still renders, without plots."""

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        return IngestReport(stored=len(turns), duplicates=0, memories=0)

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> CloseReport:
        return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)

    def recall(self, query: RecallQuery) -> RecallResult:
        return RecallResult(
            memories=(), tone_constraints=(), standing_rules=(),
            context=AssembledContext(prefix="", tone="", tail=""),
            trace=RecallTrace(mode="hybrid", legs=(), vector_candidates=0, lexical_candidates=0, fused_candidates=0,
                              dropped_below_floor=0, excluded_current_session=0, standing_rule_memories=0,
                              timings_ms={}, profile_version=1),
        )

    def close(self) -> None:
        pass


def test_an_engine_without_memories_still_gets_a_page() -> None:
    report = run_transcripts(transcripts(), engine_factory=lambda data_dir: BareEngine())

    page = render_html(report)

    assert_self_contained(page)
    root = parse(page)
    assert len(root.all("section", "probe")) == 3 and not root.all("svg")
    assert "offered no memories" in page and "Nothing was recalled." in page
