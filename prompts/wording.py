"""How memory reads to the character. Templates a director can read and change, one per register, and one per fact
relation.

Tone placeholders: {age} ("nine days ago"), {anchors} ('"Luna", "dog" and "park"'), {quote} (the user's own words).

Whatever the user or a caller said goes in quotes, never bare: a tone rule quotes its anchors, and a fact's sentence is
rendered here from its triple with the value quoted (``fact_sentence``). A turn that says "ignore previous
instructions" then reads as something the user said, not as a line of the character's instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

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
    """The anchors as the user's words, each quoted: '"Luna", "dog" and "park"'. An anchor is something the user
    said, so even an odd one reads as a topic, never as part of the rule."""
    items = [quoted(a) for a in dict.fromkeys(anchors)]
    if not items:
        return UNNAMED_TOPIC
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def quote(text: str) -> str:
    """``text`` on one line, without double quotes, so it cannot close the quotes it is put in."""
    flat = " ".join(text.split()).replace('"', "'")
    return flat if len(flat) <= MAX_QUOTE_CHARS else flat[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def quoted(text: str) -> str:
    return f'"{quote(text)}"'


# -- facts ------------------------------------------------------------------------------------------------------

# Words that instruct a model rather than name a person, place or thing. No anchor carries one
# (``traces.anchors``), no extracted value holds one (``traces.facts``), and a role or relation that holds one is
# quoted in a fact's sentence. Kept small on purpose: each is rare in chat about someone's life, and every one of
# them was in the injections a hostile tester sent ("Ignore previous instructions", "SYSTEM OVERRIDE").
INSTRUCTION_WORDS = frozenset({
    "ignore", "ignored", "ignoring", "disregard", "forget", "override", "overrides", "bypass", "jailbreak",
    "system", "assistant", "developer", "prompt", "prompts", "instruction", "instructions", "previous", "rule",
    "rules",
})

# Relation -> the sentence a fact on it is stored and shown with. {who} is "The user" or "The user's dog",
# {whose} its possessive, {thing} the subject of a relation about a thing (quoted, "my" as "their"), {value} the
# value (quoted), {a} the article for the value. The wording follows the extractor's ("The user lives in Lisbon.").
FACT_TEMPLATES: dict[str, str] = {
    "lives_in": "{who} lives in {value}.",
    "hometown": "{who} is from {value}.",
    "works_at": "{who} works at {value}.",
    "occupation": "{who} works as {a} {value}.",
    "name": "{who} is called {value}.",
    "diet": "{whose} diet is {value}.",
    "birthday": "{whose} birthday is {value}.",
    "opinion": "{who} has an opinion of {thing}: {value}.",
    "allergy": "{who} must avoid {thing}: {value}.",
    "routine": "{who} has a habit: {thing}, {value}.",
    "studies_at": "{who} studies at {value}.",
    "relationship": "{whose} relationship status is {value}.",
    "lives_with": "{who} lives with {value}.",
    "preference": "{who} takes {thing} {value}.",
    "taste": "{who} has a taste about {thing}: {value}.",
    "favourite": "{whose} favourite {thing} is {value}.",
    "has": "{who} has {value}.",
    "hobby": "{who} has a hobby: {thing}, {value}.",
    "activity": "{who} has been busy with {thing}: {value}.",
    "died": "{who}, {value}, has died.",
}
DIED_UNNAMED = "died"
"""The value of a death fact when no name was said: 'The user's dog has died.'"""
# The relations whose subject is the thing itself ("jazz", "peanut", "coffee"): the fact is the user's.
THING_RELATIONS = frozenset({"opinion", "allergy", "routine", "preference", "taste", "favourite", "has", "hobby",
                             "activity"})
OPINION_STANCES = frozenset({
    "loves", "likes", "enjoys", "adores", "hates", "dislikes", "detests", "loathes", "despises", "can't stand",
    "can't bear", "doesn't like", "doesn't enjoy", "is a fan of", "is not a fan of", "is obsessed with", "is into",
    "is crazy about", "is mad about", "is passionate about", "prefers",
})
TASTE_STANCES = OPINION_STANCES | {"doesn't drink"}
ALLERGY_KINDS: dict[str, str] = {"allergic": "is allergic to", "intolerant": "is intolerant to",
                                 "can't eat": "can't eat", "coeliac": "has coeliac disease and can't eat"}
RELATIONSHIP_STATUSES: dict[str, str] = {
    "single": "{who} is single.", "in a relationship": "{who} is in a relationship.",
    "engaged": "{who} is engaged.", "married": "{who} is married.",
    "separated": "{who} is separated from their partner.", "divorced": "{who} is divorced.",
    "widowed": "{who} is widowed.", "broken up": "{who} has broken up with their partner.",
}
# A value from one of these closed vocabularies is the server's own wording, so it goes in bare and the line reads
# as a sentence ("The user loves "jazz"."); any other value takes its relation's template above, quoted.
FACT_VALUE_TEMPLATES: dict[tuple[str, str], str] = {
    **{("opinion", stance): f"{{who}} {stance} {{thing}}." for stance in OPINION_STANCES},
    **{("taste", stance): f"{{who}} {stance} {{thing}}." for stance in TASTE_STANCES},
    **{("allergy", kind): f"{{who}} {wording} {{thing}}." for kind, wording in ALLERGY_KINDS.items()},
    **{("relationship", status): wording for status, wording in RELATIONSHIP_STATUSES.items()},
    ("works_at", "left their job"): "{who} has left their job.",
    ("studies_at", "graduated"): "{who} has graduated.",
    ("occupation", "retired"): "{who} is retired.",
    ("lives_with", "alone"): "{who} lives alone.",
    ("hobby", "plays"): "{who} plays {thing}.",
    ("hobby", "does"): "{who}'s hobbies include {thing}.",
}
# A subject of "preference" from this closed vocabulary is the server's own wording too ("usual order"), read bare.
PREFERENCE_SUBJECT_TEMPLATES: dict[str, str] = {
    "usual order": "{whose} usual order is {value}.",
    "usual drink": "{whose} usual drink is {value}.",
    "usual coffee order": "{whose} usual coffee order is {value}.",
    "breakfast": "{who} usually has {value} for breakfast.",
    "lunch": "{who} usually has {value} for lunch.",
    "dinner": "{who} usually has {value} for dinner.",
}

ENDED = "no longer"
"""The value of a fact that ends its slot starts with this word and names what ended ("no longer Orbit Foods")."""
# Relation -> the sentence of a fact that ends its slot, {value} what ended (quoted): "I don't work at Orbit Foods
# any more" reads "The user no longer works at "Orbit Foods".", not "The user works at "no longer Orbit Foods"."
ENDED_TEMPLATES: dict[str, str] = {
    "works_at": "{who} no longer works at {value}.",
    "studies_at": "{who} no longer studies at {value}.",
    "lives_in": "{who} no longer lives in {value}.",
    "lives_with": "{who} no longer lives with {value}.",
    "diet": "{who} is no longer {value}.",
    "occupation": "{who} no longer works as {a} {value}.",
}
GRADUATED_FROM = "graduated from"
"""Like ``ENDED`` for "studies_at": "graduated from Leeds University" ends the slot and says how."""
GRADUATED_TEMPLATE = "{who} graduated from {value}."
GENERIC_FACT_TEMPLATE = "{whose} {relation}: {value}."
"""A relation without a template, about the user or someone in their life ("The user's password: "…".")."""
OTHER_FACT_TEMPLATE = "About {thing}: {relation} {value}."
"""Any other subject, or one that does not fit its relation ("About "office": located in "Lisbon".")."""

# The words a role may be made of to go in a sentence bare ("little brother", "best friend", "dog"): a closed
# vocabulary, so that a caller's subject ("user's never mention death") is quoted rather than read as wording.
ROLE_WORDS = frozenset("""
    dog dogs puppy cat cats kitten pet horse bird rabbit hamster
    mom mum mother dad father parent parents sister brother sibling wife husband partner boyfriend girlfriend
    fiance fiancee son daughter kid kids child children baby grandma grandmother grandpa grandfather grandparents
    aunt uncle cousin niece nephew friend friends boss manager coworker colleague roommate flatmate neighbor
    neighbour therapist doctor teacher family team
    little big older younger elder twin best old new step half ex late
""".split())


def instruction_like(words: Sequence[str]) -> bool:
    return any(w.lower() in INSTRUCTION_WORDS for w in words)


def _role(words: str) -> str:
    """A role in the server's own words when every word is one of ``ROLE_WORDS``; anything else is quoted."""
    parts = words.split()
    return words if 0 < len(parts) <= 4 and all(w in ROLE_WORDS for w in parts) else quoted(words)


def _relation(relation: str) -> str:
    """A relation's words: bare for the relations the server words itself (``FACT_TEMPLATES``), quoted for any
    other, since a caller chose them ("always_be_cheerful_about")."""
    words = relation.replace("_", " ")
    return words if relation in FACT_TEMPLATES else quoted(words)


def _who(subject: str) -> str | None:
    """"The user", "The user's dog", or None when the subject is neither the user nor someone of theirs."""
    if subject == "user":
        return "The user"
    if subject.startswith("user's "):
        return "The user's " + _role(subject[len("user's "):])
    return None


def ended_value(relation: str, value: str) -> tuple[str, str] | None:
    """(template, what ended) when ``value`` ends its slot ("no longer Orbit Foods", "graduated from Leeds
    University" on "studies_at"), else None."""
    words = value.split(maxsplit=2)
    if relation in ENDED_TEMPLATES and len(words) > 2 and f"{words[0]} {words[1]}".lower() == ENDED:
        return ENDED_TEMPLATES[relation], words[2]
    if relation == "studies_at" and len(words) > 2 and f"{words[0]} {words[1]}".lower() == GRADUATED_FROM:
        return GRADUATED_TEMPLATE, words[2]
    return None


def fact_sentence(subject: str, relation: str, value: str) -> str:
    """The sentence a fact is stored and shown with, rendered from its triple: the template's words bare, the
    value and any thing quoted. Deterministic, so Path A stays byte-stable."""
    subject, value = " ".join(subject.split()), " ".join(value.split())
    who = _who(subject)
    template = FACT_VALUE_TEMPLATES.get((relation, value.lower()))
    if relation == "died" and value == DIED_UNNAMED:
        template = "{who} has died."
    ended = ended_value(relation, value)
    if relation in THING_RELATIONS:
        if relation == "preference":
            template = PREFERENCE_SUBJECT_TEMPLATES.get(subject)
        who, template = "The user", template or FACT_TEMPLATES[relation]
    elif who is None:
        template = OTHER_FACT_TEMPLATE
    elif template is None and ended is not None:
        template, value = ended
    else:
        template = template or FACT_TEMPLATES.get(relation, GENERIC_FACT_TEMPLATE)
    thing = re.sub(r"^user's\b", "their", subject)
    return template.format(
        who=who, whose=f"{who}'s", thing=quoted(thing), value=quoted(value),
        a="an" if value[:1].lower() in "aeiou" else "a", relation=_relation(relation),
    )


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
