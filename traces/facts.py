"""Durable facts in what the user says, extracted without a model.

Each fact is one self-contained sentence about the user ("The user lives in Lisbon."). The write-time pass
keeps them in the trace and the lexical index learns their words, so "where I live" finds "I moved to Lisbon"
even though the user never said "live". Only the relations a companion needs most are covered, each by a
pattern narrow enough to be trusted; anything unmatched is simply not a fact.
"""

from __future__ import annotations

import re

_NAME = r"([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,3})"
_THING = r"([\w'’ -]{2,40}?)"
_END = r"(?=[.,!?;]|\s+(?:for|because|since|with|and|but|last|this|next|now)\b|$)"

PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\bI(?:'ve| have)?\s+(?:just\s+|finally\s+)?moved\s+to\s+{_NAME}"), "The user lives in {0}."),
    (re.compile(rf"\bI\s+(?:live|am living|'m living)\s+in\s+{_NAME}"), "The user lives in {0}."),
    (re.compile(rf"\bI\s+(?:work|am working|'m working)\s+(?:at|for)\s+{_NAME}"), "The user works at {0}."),
    # Names must stay case-sensitive (a name is capitalised), so only the relation words ignore case.
    (re.compile(rf"\bI(?:'m| am)\s+an?\s+([a-z][a-z -]{{1,30}}?)\s+(?:at|for)\s+{_NAME}"), "The user is a {0} at {1}."),
    (re.compile(rf"\b(?i:my)\s+((?i:dog|cat|puppy|kitten|horse|rabbit|bird|pet))"
                rf"(?:'s name is|\s+is called|\s+named|,)?\s+{_NAME}"), "The user's {0} is called {1}."),
    (re.compile(rf"\b(?i:my)\s+((?i:sister|brother|mom|mum|mother|dad|father|wife|husband|partner|boyfriend|"
                rf"girlfriend|son|daughter|best friend|friend|boss))(?:'s name is|\s+is called|\s+named|,)?\s+"
                rf"{_NAME}"), "The user's {0} is called {1}."),
    (re.compile(r"\bI(?:'m| am)\s+allergic\s+to\s+" + _THING + _END, re.I), "The user is allergic to {0}."),
    (re.compile(r"\bI(?:'m| am)\s+(?:a\s+)?(vegetarian|vegan|pescatarian|gluten[- ]free|lactose intolerant)\b",
                re.I), "The user is {0}."),
    (re.compile(r"\bI\s+(?:always\s+|usually\s+)?(?:take|drink|have)\s+(?:my\s+coffee|it|coffee)\s+"
                r"(black|with milk|with oat milk|with sugar|without sugar|strong|decaf)\b", re.I),
     "The user takes their coffee {0}."),
    (re.compile(r"\bmy\s+birthday\s+is\s+(?:on\s+)?" + _THING + _END, re.I), "The user's birthday is {0}."),
    (re.compile(r"\bI\s+(?:really\s+)?(love|like|enjoy|hate|can't stand|dislike)\s+" + _THING + _END, re.I),
     "The user {0}s {1}."),
)
_VERB_FORMS = {"loves": "loves", "likes": "likes", "enjoys": "enjoys", "hates": "hates",
               "can't stands": "can't stand", "dislikes": "dislikes"}


def extract_facts(text: str) -> tuple[str, ...]:
    """Fact sentences found in one user turn, in order, without duplicates."""
    found: dict[str, None] = {}
    coffee_context = "coffee" in text.lower()
    for pattern, template in PATTERNS:
        for match in pattern.finditer(text):
            if "coffee" in template and " it " in f" {match.group(0).lower()} " and not coffee_context:
                continue  # "I take it black" is about coffee only when coffee was mentioned
            groups = [g.strip() for g in match.groups()]
            sentence = template.format(*groups)
            for wrong, right in _VERB_FORMS.items():
                sentence = sentence.replace(f"The user {wrong} ", f"The user {right} ")
            found.setdefault(sentence[0].upper() + sentence[1:], None)
    return tuple(found)
