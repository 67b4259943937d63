"""How memory reads to the character. Templates a director can read and change, one per register, and one per fact
relation.

Tone placeholders: {age} ("nine days ago"), {anchors} ('"Luna", "dog" and "park"'), {quote} (the user's own words).

Whatever the user or a caller said goes in quotes, never bare: a tone rule quotes its anchors, and a fact's sentence is
rendered here from its triple with the value quoted (``fact_sentence``). A turn that says "ignore previous
instructions" then reads as something the user said, not as a line of the character's instructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from engine.domain.vocabulary import quote, quoted

TONE_TEMPLATES: dict[str, str] = {
    "grief": (
        'The user is grieving. {age} they said: "{quote}" Do not be cheerful or upbeat about {anchors}; '
        "be gentle if they come up, and let the user lead."
    ),
    "sadness": (
        'The user has been sad. {age} they said: "{quote}" Do not be breezy about {anchors}; be warm and gentle.'
    ),
    "anxiety": (
        'The user has been anxious. {age} they said: "{quote}" Be calm and steady about {anchors}; '
        "do not add pressure."
    ),
    "anger": (
        'The user was angry. {age} they said: "{quote}" Do not be flippant about {anchors}; acknowledge it.'
    ),
    "shame": (
        'The user felt ashamed. {age} they said: "{quote}" Never tease about {anchors}; be kind and discreet.'
    ),
}
DEFAULT_TONE_TEMPLATE = (
    'A painful moment: {age} the user said: "{quote}" Be careful and gentle about {anchors}.'
)
UNNAMED_TOPIC = "what they shared"

SYSTEM_HEADER = "How to speak with this user, from what you remember of them:"
CANON_HEADER = "Who you are (your canon; it always holds):"
FACTS_HEADER = "What you know about this user (current facts):"
STANDING_HEADER = "Standing rules for speaking with this user (in force every turn):"
TONE_HEADER = "For this turn, from what just came up:"
TAIL_HEADER = (
    "Things you remember from earlier conversations with this user (the most relevant come first and last):"
)
TRUNCATED_MARK = "[…cut here: the rest of this record did not fit]"
MEMORY_LINE = '- {age}, they said: "{text}"'
MEMORY_LINE_WITH_CONTEXT = '- {age}, when you said "{context}", they said: "{text}"'

_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve")


def _count(n: int, unit: str) -> str:
    word = _NUMBERS[n] if n < len(_NUMBERS) else str(n)
    return f"{word} {unit}{'' if n == 1 else 's'}"


def age_in_words(age_days: float) -> str:
    """A human age: "earlier today", "yesterday", "nine days ago", "about three weeks ago", "over a year ago"."""
    if age_days < 0.75:
        return "earlier today"
    days = max(round(age_days), 1)
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{_count(days, 'day')} ago"
    if days < 60:
        return f"about {_count(round(days / 7), 'week')} ago"
    if days < 365:
        return f"about {_count(round(days / 30.4), 'month')} ago"
    years = days // 365
    return "over a year ago" if years == 1 else f"over {_count(years, 'year')} ago"


def anchor_phrase(anchors: Sequence[str]) -> str:
    """The anchors as the user's words, each quoted: '"Luna", "dog" and "park"'. An anchor is something the user
    said, so even an odd one reads as a topic, never as part of the rule."""
    items = [quoted(a) for a in dict.fromkeys(anchors)]
    if not items:
        return UNNAMED_TOPIC
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def date_in_words(when: datetime) -> str:
    """An absolute date ("on 2 March 2025"): standing rules use it so their wording does not change daily."""
    return f"on {when.day} {when.strftime('%B %Y')}"


# -- anniversaries ----------------------------------------------------------------------------------------------

# Register -> the sentence a standing rule gains around the anniversary of its moment. {since} is "This week marks
# a year since then" ("two years", "13 years"; "It is about a year since then" for a window wider than a week). A
# loss may be acknowledged, gently; a shame never is: the character is kind and does not raise it.
ANNIVERSARY_TEMPLATES: dict[str, str] = {
    "grief": (
        "{since}: the anniversary may weigh on them even if they do not mention it, so be especially gentle, and "
        "if it feels right, acknowledge it softly."
    ),
    "sadness": (
        "{since}: it may be on their mind even if they do not mention it, so be especially warm, and if it feels "
        "right, acknowledge it softly."
    ),
    "shame": "{since}: it may be on their mind, so be especially kind, and do not bring it up.",
}
DEFAULT_ANNIVERSARY_TEMPLATE = (
    "{since}: it may be on their mind even if they do not mention it, so be especially careful."
)
ANNIVERSARY_WEEK_DAYS = 3.5
"""A window of at most this many days either side of the day reads "This week" (seven days, centred on it); a wider
one reads "It is about"."""


def _on_the_day_in(day: date, year: int) -> date:
    """``day``'s calendar day in ``year``: 29 February falls on 28 February in a year without one."""
    try:
        return day.replace(year=year)
    except ValueError:
        return day.replace(year=year, day=28)


def anniversary_years_ago(said_at: datetime, now: datetime, window_days: float) -> int | None:
    """How many whole years (one or more) ago ``said_at`` was when ``now`` is within ``window_days`` calendar days
    of its anniversary, else None; a window of 0 never matches.

    Calendar days, not elapsed time: the anniversary of 2 March is 2 March whatever the hour (in ``now``'s time
    zone), across a year's end too (30 December is within a few days of 2 January), and a moment on 29 February
    has its anniversary on 28 February in a year without a 29th. The answer depends only on the date, so the
    rule's wording changes on the window's first and last days and on no others."""
    if window_days <= 0:
        return None
    if said_at.tzinfo is not None and now.tzinfo is not None:
        said_at = said_at.astimezone(now.tzinfo)
    moment, today = said_at.date(), now.date()
    years = today.year - moment.year
    for n in (years - 1, years, years + 1):  # the window is under a year: the nearest anniversary is among these
        if n < 1 or moment.year + n > date.max.year:  # no calendar holds the year after 9999
            continue
        if abs((today - _on_the_day_in(moment, moment.year + n)).days) <= window_days:
            return n
    return None


def anniversary_sentence(register: str, years: int, window_days: float = ANNIVERSARY_WEEK_DAYS) -> str:
    """The sentence a standing rule gains around its moment's anniversary: "This week marks a year since then:
    ...". The same on every day of the window, so the prefix changes only as the window opens and closes."""
    template = ANNIVERSARY_TEMPLATES.get(register, DEFAULT_ANNIVERSARY_TEMPLATE)
    span = "a year" if years == 1 else _count(years, "year")
    lead = "This week marks" if window_days <= ANNIVERSARY_WEEK_DAYS else "It is about"
    return template.format(since=f"{lead} {span} since then")


def tone_instruction(register: str, anchors: Sequence[str], *, text: str, age_days: float, standing: bool,
                     said_at: datetime | None = None, anniversary_years: int | None = None,
                     anniversary_window_days: float = ANNIVERSARY_WEEK_DAYS) -> str:
    """A tone rule's wording. A standing rule names the date it comes from (``said_at``) rather than an age,
    so it reads the same every turn and the stable prefix stays byte-identical. Around that date's anniversary
    (``anniversary_years`` ago, within ``anniversary_window_days``; see ``anniversary_years_ago``) a standing rule
    says so in one more sentence (``anniversary_sentence``); a rule that is not standing never does."""
    template = TONE_TEMPLATES.get(register, DEFAULT_TONE_TEMPLATE)
    age = date_in_words(said_at) if standing and said_at is not None else age_in_words(age_days)
    body = template.format(age=age[:1].upper() + age[1:], anchors=anchor_phrase(anchors), quote=quote(text))
    if standing and anniversary_years is not None and anniversary_years >= 1:
        body = f"{body} {anniversary_sentence(register, anniversary_years, anniversary_window_days)}"
    return body


REHEARSAL_HEADER = "If it fits this conversation (optional, at most once):"
REHEARSAL_TEMPLATES: dict[str, str] = {
    "bereavement": (
        "You remember this loss: {sentence} If the user brings it up, you may gently ask how they are doing with it. "
        "Never ask whether it is still true."
    ),
}
DEFAULT_REHEARSAL_TEMPLATE = (
    "You may lightly confirm that this is still true: {sentence} Only if it comes up naturally; if the user does not "
    "take it up, leave it."
)


def rehearsal_cue(reason: str, sentence: str) -> str:
    """The optional check Path A offers the character for a due rehearsed fact (``engine.rehearsal``). The sentence
    is the fact's stored one (the server's rendering, with the user's words quoted)."""
    return REHEARSAL_TEMPLATES.get(reason, DEFAULT_REHEARSAL_TEMPLATE).format(sentence=sentence)
