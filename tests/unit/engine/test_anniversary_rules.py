"""A standing rule says so around the anniversary of its moment, and only then: on every other day the stable
prefix is byte-identical, to itself and to what it was before anniversaries existed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.domain.models import RecallResult
from engine.domain.tuning import ProfileSource, ToneParams, TuningProfile
from engine.service import Engine
from tests.unit.engine.test_tone_rules import LUNA, open_engine, recall, say

LUNA_RULE = ('- The user is grieving. On 2 March 2025 they said: "My dog Luna died last week." Do not be cheerful '
             'or upbeat about "Luna", "dog" and "park"; be gentle if they come up, and let the user lead.')
A_YEAR_ON = (" This week marks a year since then: the anniversary may weigh on them even if they do not mention it, "
             "so be especially gentle, and if it feels right, acknowledge it softly.")
# T0 is 2 March 2025: the first anniversary's window is 27 February to 5 March 2026 (days 362 to 368).
OUTSIDE = (200, 300, 361, 369, 400, 700)
INSIDE = (362, 365, 368)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    opened = open_engine(tmp_path)
    say(opened, "s1", LUNA, days=0)
    yield opened
    opened.close()


def standing_line(result: RecallResult) -> str:
    lines = [line for line in result.context.prefix.splitlines() if line.startswith("- The user is grieving.")]
    assert len(lines) == 1
    return lines[0]


def test_outside_the_window_the_prefix_is_the_same_every_day(engine: Engine) -> None:
    results = [recall(engine, "What should I cook tonight?", days=d) for d in OUTSIDE]
    assert all(r.context.prefix == results[0].context.prefix for r in results)
    assert len({r.trace.context.prefix_sha256 for r in results if r.trace.context is not None}) == 1
    assert standing_line(results[0]) == LUNA_RULE  # the wording it always had
    assert all(rule.anniversary_years is None for r in results for rule in r.standing_rules)


def test_within_the_window_the_standing_rule_names_the_anniversary(engine: Engine) -> None:
    before = recall(engine, "What should I cook tonight?", days=300)
    for day in INSIDE:
        result = recall(engine, "What should I cook tonight?", days=day)
        [rule] = result.standing_rules
        assert rule.anniversary_years == 1 and rule.standing
        assert rule.instruction == LUNA_RULE[2:] + A_YEAR_ON
        assert standing_line(result) == LUNA_RULE + A_YEAR_ON
        assert result.context.prefix != before.context.prefix
        # Only the standing rule's line changed.
        assert result.context.prefix.replace(A_YEAR_ON, "") == before.context.prefix
    # Every day of the window reads the same, so the prefix changes only as the window opens and closes.
    assert len({recall(engine, "Hello.", days=d).context.prefix for d in INSIDE}) == 1
    two_years = recall(engine, "What should I cook tonight?", days=731)  # 2 March 2027
    assert two_years.standing_rules[0].anniversary_years == 2
    assert " This week marks two years since then: " in two_years.context.prefix


def test_a_window_of_zero_turns_anniversaries_off(tmp_path: Path) -> None:
    never = TuningProfile(tone=ToneParams(anniversary_window_days=0))
    opened = open_engine(tmp_path, ProfileSource(default=never))
    try:
        say(opened, "s1", LUNA, days=0)
        on_the_day = recall(opened, "What should I cook tonight?", days=365)
        assert on_the_day.standing_rules[0].anniversary_years is None
        assert on_the_day.context.prefix == recall(opened, "What should I cook tonight?", days=300).context.prefix
        assert standing_line(on_the_day) == LUNA_RULE
    finally:
        opened.close()


def test_a_recent_tone_constraint_never_names_an_anniversary(engine: Engine) -> None:
    fresh = recall(engine, "Luna loved the park.", days=9)
    assert fresh.tone_constraints and not fresh.standing_rules
    assert all(c.anniversary_years is None and "marks a year" not in c.instruction for c in fresh.tone_constraints)
