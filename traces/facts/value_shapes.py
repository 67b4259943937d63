"""Whether a fact has its relation's shape (``well_formed``): the last check on every extracted value, and on a
model's facts before they land active."""

from __future__ import annotations

import re

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import (
    ALLERGY_KINDS,
    INSTRUCTION_WORDS,
    OPINION_STANCES,
    RELATIONSHIP_STATUSES,
    TASTE_STANCES,
    ended_value,
)
from traces.facts.lexicon import _JOBS, _MONTHS
from traces.facts.values import _CONNECTORS, _MAX_THING_WORDS

# -- the shape of a value ---------------------------------------------------------------------------------------

# Words no name, place, employer or job holds, and instructions do. A Title-Case turn ("I work at the System Says
# Be Cheerful About Luna") otherwise reads as an employer. Not "will", "do", "am": names and places hold them
# (Will, Porto do Son, Frankfurt am Main).
_NOT_IN_VALUES = frozenset({
    *INSTRUCTION_WORDS, "say", "says", "said", "tell", "tells", "be", "is", "are", "was", "were", "must", "should",
    "shall", "does", "don't", "act", "pretend", "stop", "delete", "reveal", "respond", "reply", "answer", "you",
    "your", "yourself", "now",
})
_JOB_WORDS = frozenset(w for job in _JOBS for w in job.split())  # "developer", "shop assistant" are jobs
# How many capitalised words a name may have, as the patterns above read them (_PLACE_NAME, _ORG_NAME,
# _PERSON_NAME): a longer one is a clause.
_NAME_WORDS: dict[str, int] = {"lives_in": 4, "hometown": 4, "works_at": 5, "name": 3, "studies_at": 5}
# The values that are the server's own words ("left their job"): nothing of the user's text to check.
_CLOSED_VALUES = frozenset({("works_at", "left their job"), ("studies_at", "graduated"), ("occupation", "retired"),
                            ("lives_with", "alone")})
_NAME_WORD = re.compile(r"[A-ZÀ-ÖØ-Þ0-9][\w&'-]*(?:\.[\w&'-]+)*")
_TITLE = re.compile(r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|St)\.")
_LOWER_WORD = re.compile(r"[a-zà-ÿ][a-zà-ÿ'-]*")
_DATE_WORD = re.compile(r"\d{1,2}(?:st|nd|rd|th)?|\d{4}|of|the")
_SENTENCE_MARKS = re.compile(r"[.:;!?\"()\[\]{}<>,\n]")
_CLOCK_TIME = re.compile(r"(?<=\d)[:.](?=\d)")  # "at 6:30 every morning" is a time, not two clauses
_MAX_VALUE_WORDS = 12


def _instructing(words: list[str]) -> bool:
    return any(w.lower().removesuffix("'s") in _NOT_IN_VALUES for w in words)


def _a_name(value: str, most: int) -> bool:
    """A few capitalised words, joined by the connectors places and employers use ("Bank of England")."""
    words = value.split()
    named = [w for w in words if w not in _CONNECTORS]
    return (0 < len(named) <= most and words[0] not in _CONNECTORS and not _instructing(words)
            and all(_NAME_WORD.fullmatch(w) or _TITLE.fullmatch(w) for w in named))


def _a_phrase(text: str, most: int, *, allowed: frozenset[str] = frozenset()) -> bool:
    """A few words and no sentence: no clause marks, no instruction (``allowed`` words excepted)."""
    words = text.split()
    return (0 < len(words) <= most and not _SENTENCE_MARKS.search(_CLOCK_TIME.sub("", text))
            and not _instructing([w for w in words if w.lower() not in allowed]))


def _someone(subject: str) -> bool:
    """"user" or "user's <role>": the subject of a fact about the user or a person or animal in their life."""
    if subject == "user":
        return True
    role = subject.removeprefix("user's ").split()
    return (subject.startswith("user's ") and 0 < len(role) <= 3 and all(_LOWER_WORD.fullmatch(w) for w in role)
            and not _instructing(role))


def _companion_shaped(value: str) -> bool:
    """Who someone lives with: "alone", "their <role>", or a few names ("Sam and Alex")."""
    words = value.split()
    if value == "alone":
        return True
    if words[0] == "their":
        return 1 < len(words) <= 4 and all(_LOWER_WORD.fullmatch(w) for w in words[1:]) and not _instructing(words)
    return _a_name(" ".join(w for w in words if w != "and"), 4) and words[-1] != "and"


def well_formed(fact: ExtractedFact) -> bool:
    """Whether a fact has its relation's shape: an employer, a home or a name is a few capitalised words, a job a
    few lower-case ones, a date a date, a stance, a status or a kind of allergy one of the known ones, and nothing
    holds an instruction or a clause. A value that ends its slot ("no longer Orbit Foods", "graduated from Leeds
    University") has the shape of what ended. The extractor keeps only such facts, and a model's (``engine.facts``)
    that is not waits for review: either way the value is the user's text, and it is about to be recalled as a
    fact."""
    subject, relation, value = fact.subject, fact.relation, fact.value
    ended = ended_value(relation, value)
    if ended is not None:
        value = ended[1]
    elif (relation, value) in _CLOSED_VALUES:
        return _someone(subject)
    if relation == "works_at" and value.startswith("their own "):
        words = value.split()[2:]
        return (_someone(subject) and 0 < len(words) <= 4 and all(_LOWER_WORD.fullmatch(w) for w in words)
                and not _instructing(words))
    if relation in _NAME_WORDS:
        return _someone(subject) and _a_name(value, _NAME_WORDS[relation])
    if relation == "occupation":
        words = value.split()
        return (_someone(subject) and 0 < len(words) <= 5 and all(_LOWER_WORD.fullmatch(w) for w in words)
                and _a_phrase(value, 5, allowed=_JOB_WORDS))
    if relation == "birthday":
        words = value.split()
        return (_someone(subject) and 0 < len(words) <= 5 and any(w.lower().rstrip(".") in _MONTHS for w in words)
                and all(w.lower().rstrip(".") in _MONTHS or _DATE_WORD.fullmatch(w) for w in words))
    if relation == "diet":
        return _someone(subject) and _a_phrase(value, 5) and all(_LOWER_WORD.fullmatch(w) for w in value.split())
    if relation == "allergy":
        return value.lower() in ALLERGY_KINDS and _a_phrase(subject, 3)
    if relation == "opinion":
        return value.lower() in OPINION_STANCES and _a_phrase(subject, _MAX_THING_WORDS)
    if relation == "taste":
        return value.lower() in TASTE_STANCES and _a_phrase(subject, _MAX_THING_WORDS)
    if relation == "relationship":
        return _someone(subject) and value.lower() in RELATIONSHIP_STATUSES
    if relation == "lives_with":
        return _someone(subject) and _a_phrase(value, 8) and _companion_shaped(value)
    if relation == "favourite":
        return _a_phrase(subject, 4) and _a_phrase(value, _MAX_THING_WORDS + 2)
    if relation == "hobby":
        return value in ("plays", "does") and _a_phrase(subject, 4)
    if relation == "has":
        words = value.lower().split()
        return (_a_phrase(subject, 2) and 0 < len(words) <= 4 and _a_phrase(value, 4)
                and all(_LOWER_WORD.fullmatch(w) or w.isdigit() for w in words))
    if relation == "activity":
        return _a_phrase(subject, _MAX_THING_WORDS + 2) and _a_phrase(value, 4)
    if relation == "died":
        return _someone(subject) and (value == "died" or _a_name(value, _NAME_WORDS["name"]))
    if relation in ("routine", "preference"):
        return _a_phrase(subject, _MAX_THING_WORDS) and _a_phrase(value, _MAX_VALUE_WORDS)
    return _a_phrase(subject, _MAX_THING_WORDS) and _a_phrase(value, _MAX_VALUE_WORDS)
