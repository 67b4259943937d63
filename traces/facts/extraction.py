"""Extraction: every rule over every sentence of a turn, with its guards, and the slots a turn fills or ends."""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import ended_value
from traces.facts.guards import (
    _AFTER,
    _CLAUSE_BOUNDARY,
    _JOKE,
    _QUOTED,
    _SENTENCE_END,
    _SUBJECTLESS,
    _UNDONE,
    _answerable_end,
    _hedged,
    _long_ago,
    _normalise,
)
from traces.facts.lexicon import _PETS, _alternation, _name, _role
from traces.facts.rules import _MY, _RULES
from traces.facts.value_shapes import well_formed
from traces.facts.values import _fact, _person, _role_of

# System-extracted facts on these relations land active; the others land provisional, waiting for review.
# A first-person present-tense statement of who the user is (where they live and come from, who with, their work
# and school, their relationship, names, diet, allergies, birthday, pets and children) is stated deliberately,
# rarely sarcastic and stable for months, and the patterns for it are the narrowest; when it is wrong the user
# corrects it in the same words, and the correction supersedes. An allergy is also a safety matter: a companion
# that forgets one is worse than one that recalls a stale one. So are tastes in food and drink and how the user
# has them ("I take my coffee with oat milk", "I can't stand coriander", "my favourite film is Alien"): they are
# stable for years, rarely a mood, and what a companion is asked about when the user orders ("what should I
# get?"), so they are current facts too. Opinions of anything else and routines are the opposite: moods pass for
# opinions ("I hate running" after one bad run), jokes and exaggeration are common, and both drift, so they wait
# for corroboration.
AUTO_ACTIVE_RELATIONS: frozenset[str] = frozenset(
    {"lives_in", "hometown", "works_at", "occupation", "name", "diet", "allergy", "birthday", "studies_at",
     "relationship", "lives_with", "preference", "taste", "favourite", "has", "hobby", "died"}
)


def _sentence_facts(sentence: str, text: str) -> Iterator[ExtractedFact]:
    if _SUBJECTLESS.match(sentence):
        sentence = "I " + sentence[:1].lower() + sentence[1:]
    answerable = _answerable_end(sentence)
    boundaries = [0, *(b.end() for b in _CLAUSE_BOUNDARY.finditer(sentence))]
    # Quoted words are someone's speech, or the user quoting: not a statement about the user.
    quoted = [quote.span() for quote in _QUOTED.finditer(sentence)]
    read: list[tuple[int, int]] = []  # spans a rule has made facts of
    for rule in _RULES:
        for match in rule.pattern.finditer(sentence):
            if match.end() > answerable or any(start <= match.start() < end for start, end in quoted):
                continue
            if rule.general and any(start <= match.start() < end for start, end in read):
                continue
            if _hedged(sentence, match.start(), boundaries):
                continue
            if not rule.negative and _UNDONE.search(sentence, match.end(), match.end() + _AFTER):
                continue
            if rule.negative and _JOKE.search(sentence, match.end(), match.end() + _AFTER):
                continue
            if rule.change and _long_ago(sentence, match, boundaries):
                continue
            facts = [fact for fact in rule.build(match, text) if well_formed(fact)]
            if facts:
                read.append((match.start(), match.end()))
                yield from facts


_PRONOUN_NAME = re.compile(rf"\b(?:his|her|its)\s+name(?:'s|\s+is)\s+{_name()}", re.I)
_MY_ROLE = re.compile(rf"{_MY}{_role()}\b|\bI(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|recently\s+)?(?:got|have|"
                      rf"adopted|rescued|bought)\s+(?:a|an|this|our|my)\s+(?:(?:new|little|cute|tiny|baby|rescue|"
                      rf"lovely|gorgeous|beautiful|adorable)\s+)*(?P<pet>{_alternation(_PETS)})\b", re.I)


def _pronoun_names(text: str) -> list[ExtractedFact]:
    """"I got a puppy two weeks ago! Her name's Coco.": the name of the one person or animal of the user's the turn
    named before it. Two of them ("my dog and my cat... her name is") and it is not said which: nothing."""
    facts: list[ExtractedFact] = []
    for said in _PRONOUN_NAME.finditer(text):
        sentence_start = max(text.rfind(mark, 0, said.start()) for mark in (".", "!", "?", "\n"))
        sentence = text[sentence_start + 1:]
        if _hedged(text, said.start(), [sentence_start + 1]) or "?" in sentence.split(".")[0]:
            continue
        roles = {_role_of(m) if m.group("role") else m.group("pet").lower() for m in _MY_ROLE.finditer(text, 0,
                                                                                                          said.start())}
        name = _person(said)
        if len(roles) == 1 and name is not None:
            fact = _fact(f"user's {roles.pop()}", "name", name)
            if well_formed(fact):
                facts.append(fact)
    return facts


_ENDING_VALUES = frozenset({"left their job", "graduated", "broken up"})


def ends_slot(fact: ExtractedFact) -> bool:
    """Whether a fact ends its slot rather than fills it: "no longer Orbit Foods", "left their job", "graduated"."""
    return ended_value(fact.relation, fact.value) is not None or fact.value.lower() in _ENDING_VALUES


def extract(text: str) -> tuple[ExtractedFact, ...]:
    """The atomic facts the user states in one turn, in order, without duplicates. A turn that ends a slot and
    fills it ("I left Brightline and joined Orbit Foods") keeps only the new value: it is what is current."""
    text = _normalise(text)
    found: dict[tuple[str, str, str], ExtractedFact] = {}
    for sentence in _SENTENCE_END.split(text):
        for fact in _sentence_facts(sentence.strip(), text):
            found.setdefault((fact.subject, fact.relation, fact.value.casefold()), fact)
    for fact in _pronoun_names(text):
        found.setdefault((fact.subject, fact.relation, fact.value.casefold()), fact)
    filled = {(f.subject, f.relation) for f in found.values() if not ends_slot(f)}
    return tuple(f for f in found.values() if not (ends_slot(f) and (f.subject, f.relation) in filled))


def extract_facts(text: str) -> tuple[str, ...]:
    """The sentences of ``extract``: what the trace keeps and the lexical index learns."""
    return tuple(dict.fromkeys(fact.sentence for fact in extract(text)))
