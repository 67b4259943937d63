"""Anniversaries of standing-rule moments: the calendar logic and the sentence a standing rule gains."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine.domain.tuning import ToneParams
from prompts.wording import anniversary_sentence, anniversary_years_ago, tone_instruction

LUNA_DAY = datetime(2025, 3, 2, 18, tzinfo=UTC)
WEEK = ToneParams().anniversary_window_days


def at(year: int, month: int, day: int, hour: int = 12) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def test_the_default_window_is_a_week_centred_on_the_day() -> None:
    assert WEEK == 3.5


@pytest.mark.parametrize(("now", "years"), [
    (at(2026, 3, 2), 1),  # the day itself
    (at(2026, 2, 27), 1),  # three days before
    (at(2026, 3, 5), 1),  # three days after
    (at(2026, 2, 26), None),  # four days before
    (at(2026, 3, 6), None),  # four days after
    (at(2027, 3, 1), 2),
    (at(2035, 3, 4), 10),
    (at(2025, 3, 2, 20), None),  # the day it was said is no anniversary
    (at(2025, 3, 4), None),
    (at(2025, 9, 2), None),  # half a year on
])
def test_within_the_window_of_whole_years_after_the_moment(now: datetime, years: int | None) -> None:
    assert anniversary_years_ago(LUNA_DAY, now, WEEK) == years


def test_calendar_days_count_not_hours() -> None:
    late = datetime(2025, 3, 2, 23, 30, tzinfo=UTC)
    assert anniversary_years_ago(late, datetime(2026, 3, 5, 23, 59, tzinfo=UTC), WEEK) == 1
    assert anniversary_years_ago(late, datetime(2026, 3, 6, 0, 1, tzinfo=UTC), WEEK) is None
    assert anniversary_years_ago(late, datetime(2026, 2, 27, 0, 0, tzinfo=UTC), WEEK) == 1
    # The calendar is read in now's time zone: 23:30 UTC on 2 March is 3 March in Tokyo.
    tokyo = timezone(timedelta(hours=9))
    assert anniversary_years_ago(late, datetime(2026, 3, 6, 12, tzinfo=tokyo), WEEK) == 1
    assert anniversary_years_ago(late, datetime(2026, 3, 7, 12, tzinfo=tokyo), WEEK) is None


@pytest.mark.parametrize(("said", "now", "years"), [
    (at(2024, 12, 30), at(2026, 1, 2), 1),  # the anniversary was three days ago, last year
    (at(2024, 12, 30), at(2025, 12, 27), 1),
    (at(2025, 1, 2), at(2025, 12, 30), 1),  # the anniversary is in three days, next year
    (at(2025, 1, 2), at(2026, 12, 30), 2),
    (at(2025, 1, 2), at(2025, 12, 29), None),
    (at(2024, 12, 31), at(2025, 1, 3), None),  # three days on is not a year on
])
def test_across_a_years_end(said: datetime, now: datetime, years: int | None) -> None:
    assert anniversary_years_ago(said, now, WEEK) == years


@pytest.mark.parametrize(("now", "years"), [
    (at(2025, 2, 28), 1),  # no 29th: the anniversary falls on the 28th
    (at(2025, 2, 25), 1),
    (at(2025, 3, 3), 1),  # three days after the 28th
    (at(2025, 3, 4), None),
    (at(2025, 2, 24), None),
    (at(2028, 2, 29), 4),  # a leap year keeps the 29th
    (at(2028, 3, 3), 4),
    (at(2028, 3, 4), None),  # four days after the 29th
])
def test_a_moment_on_29_february(now: datetime, years: int | None) -> None:
    assert anniversary_years_ago(at(2024, 2, 29), now, WEEK) == years


def test_a_window_of_zero_never_matches() -> None:
    assert anniversary_years_ago(LUNA_DAY, LUNA_DAY.replace(year=2026), 0.0) is None
    assert anniversary_years_ago(LUNA_DAY, LUNA_DAY.replace(year=2026), 0.5) == 1  # the day alone


def test_a_wider_window() -> None:
    assert anniversary_years_ago(LUNA_DAY, at(2026, 2, 1), 30) == 1
    assert anniversary_years_ago(LUNA_DAY, at(2026, 1, 30), 30) is None


def test_every_day_of_the_window_gives_the_same_answer() -> None:
    first = at(2026, 2, 27, hour=0)  # the window is seven whole calendar days: 27 February to 5 March
    answers = {anniversary_years_ago(LUNA_DAY, first + timedelta(hours=h), WEEK) for h in range(0, 7 * 24)}
    assert answers == {1}


# -- the wording ------------------------------------------------------------------------------------------------

LUNA_RULE = ('The user is grieving. On 2 March 2025 they said: "My dog Luna died last week." Do not be cheerful '
             'or upbeat about "Luna" and "dog"; be gentle if they come up, and let the user lead.')


def luna_rule(*, standing: bool = True, years: int | None = None, window: float = WEEK) -> str:
    return tone_instruction("grief", ["Luna", "dog"], text="My dog Luna died last week.", age_days=365,
                            standing=standing, said_at=LUNA_DAY, anniversary_years=years,
                            anniversary_window_days=window)


def test_without_an_anniversary_the_rule_reads_as_it_always_has() -> None:
    assert luna_rule() == LUNA_RULE
    assert tone_instruction("grief", ["Luna", "dog"], text="My dog Luna died last week.", age_days=365,
                            standing=True, said_at=LUNA_DAY) == LUNA_RULE


def test_a_standing_rule_near_the_anniversary_says_so() -> None:
    assert luna_rule(years=1) == LUNA_RULE + (
        " This week marks a year since then: the anniversary may weigh on them even if they do not mention it, so "
        "be especially gentle, and if it feels right, acknowledge it softly.")
    assert " This week marks two years since then: " in luna_rule(years=2)
    assert " This week marks 13 years since then: " in luna_rule(years=13)
    # A window wider than a week does not say "this week".
    assert luna_rule(years=1, window=30) == LUNA_RULE + (
        " It is about a year since then: the anniversary may weigh on them even if they do not mention it, so be "
        "especially gentle, and if it feels right, acknowledge it softly.")


def test_only_a_standing_rule_gets_the_anniversary() -> None:
    recent = luna_rule(standing=False, years=1)
    assert "marks a year" not in recent and recent.startswith("The user is grieving. Over a year ago they said")


def test_a_shame_is_not_brought_up_on_its_anniversary() -> None:
    sentence = anniversary_sentence("shame", 1)
    assert sentence == "This week marks a year since then: it may be on their mind, so be especially kind, and do " \
                       "not bring it up."
    assert "acknowledge" not in sentence
    assert anniversary_sentence("anger", 3).startswith("This week marks three years since then: ")


def test_the_last_day_the_calendar_holds_has_no_anniversary_after_it() -> None:
    # A recall at 9999-12-31 (the far edge the API accepts) must not ask for a date in year 10000.
    said = datetime(9998, 12, 30, tzinfo=UTC)
    assert anniversary_years_ago(said, datetime(9999, 12, 31, 23, 59, tzinfo=UTC), 3.5) == 1
    assert anniversary_years_ago(datetime(9999, 1, 2, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC), 3.5) is None
