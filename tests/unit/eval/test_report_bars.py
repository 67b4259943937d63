"""The score bars of the ``eval run --html`` page: one stated scale per bar, and no bar for no effect.

Relevance and the score are drawn on 0 to 1. A multiplier (salience weight, anchor boost, strength, scope weight)
is drawn as its effect on the score from a centre line on a log scale, a half-bar being ``EFFECT_HALF_SCALE``: a
component at 1 draws nothing, and x2 and x0.5 draw the same length in opposite directions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.adapters.hashing_embedder import HashingEmbedder
from engine.domain.models import ScoreComponents
from engine.service import Engine
from engine.transcripts.format import parse_transcript
from eval.report import (
    BAR_SCALE_NOTE,
    COMPONENTS,
    EFFECT_HALF_SCALE,
    MULTIPLIERS,
    bar_for,
    component_bars,
    render_html,
)
from eval.transcripts import run_transcripts
from tests.fakes import hashing_engine_in
from tests.sessions import LUNA_TRANSCRIPT_HEAD


@dataclass
class Row:
    component: str
    scale: str
    title: str
    value: str = ""
    fill_classes: set[str] = field(default_factory=set)
    side: str = ""  # "up" or "down" for a multiplier (which half holds the fill), "linear" otherwise
    width_percent: float = math.nan
    fills: int = 0


class Bars(HTMLParser):
    """The bar rows of a page or fragment: what each draws, and on which side of the centre line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[Row] = []
        self.open: list[set[str]] = []  # the classes of the open spans inside the current row
        self.in_value = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        if tag == "div" and "bar-row" in classes:
            self.rows.append(Row(attributes["data-component"] or "", attributes["data-scale"] or "",
                                 attributes["title"] or ""))
            return
        if tag != "span" or not self.rows:
            return
        row = self.rows[-1]
        if "fill" in classes:
            width = re.fullmatch(r"width:([\d.]+)%", attributes.get("style") or "")
            assert width is not None, attributes
            row.fills += 1
            row.fill_classes, row.width_percent = classes, float(width[1])
            enclosing = self.open[-1] if self.open else set()
            row.side = "linear" if "linear" in enclosing else "up" if "up" in enclosing else "down"
        self.in_value = "bar-value" in classes
        self.open.append(classes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self.open:
            self.open.pop()
            self.in_value = False

    def handle_data(self, data: str) -> None:
        if self.in_value:
            self.rows[-1].value += data


def bars(markup: str) -> dict[str, Row]:
    parser = Bars()
    parser.feed(markup)
    parser.close()
    return {row.component: row for row in parser.rows}


def components(**values: float) -> ScoreComponents:
    neutral: dict[str, float] = {"relevance": 0.5, "salience": 0.0, "salience_weight": 1.0, "anchor_boost": 1.0,
                                 "strength": 1.0, "scope_weight": 1.0, "age_days": 1.0, "half_life_days": 1.0}
    neutral.update(values)
    product = neutral["relevance"] * math.prod(neutral[name] for name in MULTIPLIERS)
    return ScoreComponents(**{"score": product, **neutral})  # a given score wins over the product


def test_every_component_is_either_a_multiplier_or_on_zero_to_one() -> None:
    drawn = bars(component_bars(components()))
    assert list(drawn) == [name for name, _ in COMPONENTS]
    assert {"salience_weight", "anchor_boost", "strength", "scope_weight"} == MULTIPLIERS
    for name, row in drawn.items():
        assert row.scale == ("effect" if name in MULTIPLIERS else "linear")
        assert row.fills == 1


def test_a_multiplier_of_one_draws_no_bar() -> None:
    drawn = bars(component_bars(components()))

    for name in MULTIPLIERS:
        assert drawn[name].width_percent == 0.0, name
        assert drawn[name].value == "1.000"
        assert "no effect" in drawn[name].title


def test_a_x2_boost_and_a_x0_5_penalty_draw_half_bars_in_opposite_directions() -> None:
    drawn = bars(component_bars(components(anchor_boost=2.0, strength=0.5)))

    boost, penalty = drawn["anchor_boost"], drawn["strength"]
    assert EFFECT_HALF_SCALE == 4.0  # the scale the page states: a half-bar is x4, so x2 reaches halfway
    assert boost.width_percent == penalty.width_percent == 50.0
    assert (boost.side, penalty.side) == ("up", "down")
    assert "a boost" in boost.title and "a penalty" in penalty.title
    for name in ("salience_weight", "scope_weight"):
        assert drawn[name].width_percent == 0.0


def test_relevance_and_the_score_are_drawn_on_zero_to_one_whatever_else_the_page_holds() -> None:
    drawn = bars(component_bars(components(relevance=0.25, anchor_boost=2.0)))

    assert drawn["relevance"].side == drawn["score"].side == "linear"
    assert drawn["relevance"].width_percent == 25.0
    assert drawn["score"].width_percent == 50.0
    assert "full width = 1" in drawn["relevance"].title


def test_a_value_beyond_the_scale_fills_its_bar_and_says_so() -> None:
    drawn = bars(component_bars(components(relevance=0.9, anchor_boost=5.0, strength=0.2, scope_weight=0.0, score=1.8)))

    for name, side in (("anchor_boost", "up"), ("strength", "down"), ("scope_weight", "down"), ("score", "linear")):
        assert drawn[name].width_percent == 100.0, name
        assert drawn[name].side == side
        assert "clipped" in drawn[name].fill_classes and "off the scale" in drawn[name].title
    assert "clipped" not in drawn["relevance"].fill_classes


def test_the_hover_text_gives_the_exact_value() -> None:
    drawn = bars(component_bars(components(relevance=0.123456789, anchor_boost=2.1648075580596924)))

    assert drawn["relevance"].title.startswith("relevance = 0.123456789 ")
    assert drawn["anchor_boost"].title.startswith("anchor boost = 2.1648075580596924: ×2.165 on the score")
    assert drawn["relevance"].value == "0.123"


@given(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False))
def test_a_multiplier_and_its_inverse_draw_the_same_length_in_opposite_directions(value: float) -> None:
    bar, inverse = bar_for("anchor_boost", value), bar_for("anchor_boost", 1.0 / value)

    assert bar.width_percent == pytest.approx(inverse.width_percent, abs=1e-9)
    assert 0.0 <= bar.width_percent <= 100.0
    assert {bar.direction, inverse.direction} == ({"none"} if value == 1.0 else {"up", "down"})


@given(st.floats(min_value=1e-6, max_value=1e6), st.floats(min_value=1e-6, max_value=1e6))
def test_a_larger_effect_never_draws_a_shorter_bar(first: float, second: float) -> None:
    smaller, larger = sorted((first, second), key=lambda value: abs(math.log(value)))

    assert bar_for("strength", smaller).width_percent <= bar_for("strength", larger).width_percent + 1e-9


# -- on a page ------------------------------------------------------------------------------------------------

LUNA = LUNA_TRANSCRIPT_HEAD + """\
      - user: "Luna and I walked in the park every single morning."
      - user: "I had pasta for lunch."
  - at: "+9d"
    turns:
      - user: "I went for a walk in the park with Luna's old lead."
        probe:
          recall_any: [Luna]
"""


def test_the_page_states_the_scales_and_draws_every_bar_on_them(tmp_path: Path) -> None:
    embedder = HashingEmbedder()

    def factory(data_dir: Path) -> Engine:
        return hashing_engine_in(data_dir, embedder)

    report = run_transcripts([parse_transcript(LUNA, file="luna.yaml")], engine_factory=factory)
    page = render_html(report)

    assert page.count(BAR_SCALE_NOTE) == 1
    assert "full width = 1" in BAR_SCALE_NOTE and "half-bar = ×4" in BAR_SCALE_NOTE
    assert "no bar at ×1" in BAR_SCALE_NOTE
    recalled = [memory for result in report.results for memory in result.recall.memories]
    parser = Bars()
    parser.feed(page)
    assert len(parser.rows) == len(recalled) * len(COMPONENTS) > 0
    rows = iter(parser.rows)
    for memory in recalled:
        for name, _ in COMPONENTS:
            row, value = next(rows), float(getattr(memory.components, name))
            bar = bar_for(name, value)
            assert row.component == name
            assert row.width_percent == pytest.approx(bar.width_percent, abs=0.05)
            if name in MULTIPLIERS:
                assert row.side == ("down" if value < 1.0 else "up")
                if value == 1.0:
                    assert row.width_percent == 0.0
    assert any(memory.components.anchor_boost == 1.0 for memory in recalled)
