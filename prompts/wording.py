"""How memory reads to the character. Templates a director can read and change, one per register.

Placeholders: {age} ("nine days ago"), {anchors} ("Luna, dog and park"), {quote} (the user's own words).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

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
MAX_QUOTE_CHARS = 240

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
    items = list(dict.fromkeys(anchors))
    if not items:
        return UNNAMED_TOPIC
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def quote(text: str) -> str:
    flat = " ".join(text.split()).replace('"', "'")
    return flat if len(flat) <= MAX_QUOTE_CHARS else flat[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def date_in_words(when: datetime) -> str:
    """An absolute date ("on 2 March 2025"): standing rules use it so their wording does not change daily."""
    return f"on {when.day} {when.strftime('%B %Y')}"


def tone_instruction(register: str, anchors: Sequence[str], *, text: str, age_days: float, standing: bool,
                     said_at: datetime | None = None) -> str:
    """A tone rule's wording. A standing rule names the date it comes from (``said_at``) rather than an age,
    so it reads the same every turn and the stable prefix stays byte-identical."""
    template = TONE_TEMPLATES.get(register, DEFAULT_TONE_TEMPLATE)
    age = date_in_words(said_at) if standing and said_at is not None else age_in_words(age_days)
    body = template.format(age=age[:1].upper() + age[1:], anchors=anchor_phrase(anchors), quote=quote(text))
    return body
