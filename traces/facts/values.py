"""Building a fact from a match: the server's sentence for the triple, and the values as the patterns read them
(a capitalised name, a role, the object of a like or a habit, a date)."""

from __future__ import annotations

import re
from collections.abc import Callable

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import ENDED, Relation, fact_sentence
from traces.facts.lexicon import (
    _GROUPS,
    _HABITS,
    _MONTHS,
    _NOT_NAMES,
    _NOT_PART_OF_NAMES,
    _OBJECT_WORDS,
    _PEOPLE,
    _PETS,
)

# -- objects of likes, dislikes and habits ----------------------------------------------------------------------

# First words that make a like's object a clause or a pronoun, not a thing ("I like to think", "I hate when").
_NOT_THINGS_FIRST = frozenset({
    "to", "it", "it's", "its", "that", "this", "these", "those", "how", "what", "when", "where", "why", "who",
    "whether", "if", "someone", "somebody", "anyone", "anybody", "everyone", "everybody", "everything",
    "anything", "nothing", "something", "there", "here", "a", "an", "having", "seeing", "hearing", "talking",
    "chatting", "out", "up", "off", "in", "both", "either", "every", "each", "'cause", "cause", "cos", "also",
})
# A liked thing that is only one of these says too little to be a taste ("I like playing for fun").
_VAGUE_THINGS = frozenset({"playing", "doing", "having", "being", "going", "getting", "making", "trying", "working",
                           "it all", "everything", "stuff", "things"})
_PRONOUNS = frozenset({
    "you", "your", "yours", "u", "ur", "him", "he", "his", "she", "her", "hers", "they", "them", "it", "this",
    "that", "these", "those", "me", "myself", "yourself", "himself", "herself", "themselves", "our", "us", "ya",
    "their", "theirs", "ours", "mine",
    "yah", "y'all", "ye", "thee",
})
# The same for a habit's object, which may start with a preposition ("cycle to work", "go out").
_NOT_HABITS_FIRST = frozenset({
    "it", "it's", "its", "that", "this", "these", "those", "there", "here", "something", "anything", "nothing",
    "everything", "someone", "anyone", "everyone", "so", "too", "much", "more", "less", "a", "an", "and", "or",
    "but", "then", "also",
})
# Words that make an object phrase about the conversation, a person, a passing moment or a clause, not a thing.
_NOT_THINGS_ANYWHERE = frozenset({
    *_PRONOUNS, "idea", "way", "fact", "thought", "feeling", "things", "stuff", "life", "self", "body", "guy",
    "girl", "lot", "not", "no", "today", "tonight", "tomorrow", "yesterday", "never", "but", "because", "i", "i'm",
    "we", "if", "when", "too", "much", "more", "less", "again",
})
# People are not likes or dislikes ("I love my mum" is affection, "I hate my boss" a mood), but they do take part
# in habits ("I call my mum every Sunday").
_PEOPLE_WORDS = frozenset({
    "family", "friend", "friends", "kids", "children", "boys", "girls", "neighbour", "neighbours", "neighbor",
    "neighbors", "colleague", "colleagues", "coworker", "coworkers", "co-workers", "classmates", "flatmates",
    "roommates", "housemates", "team", "teacher", "teachers", "cousin", "cousins", "aunt", "uncle", "niece",
    "nephew",
    *(w for role in (*_PEOPLE, *_GROUPS) for w in role.split()),
    *(f"{w}s" for role in _PEOPLE for w in role.split()), "nieces", "nephews", "grandkids", "grandchildren",
    "babies",
})
_MAX_THING_WORDS = 6
_THING = r"(?P<thing>[^.,!?;:()]{1,60}?)"


# -- building facts ---------------------------------------------------------------------------------------------

Build = Callable[[re.Match[str], str], list[ExtractedFact]]


def _fact(subject: str, relation: Relation, value: str) -> ExtractedFact:
    """The fact, with the server's sentence for it (``prompts.wording.fact_sentence``): never the user's words."""
    subject, value = " ".join(subject.lower().split()), " ".join(value.split())
    return ExtractedFact(subject=subject, relation=relation, value=value,
                         sentence=fact_sentence(subject, relation, value))


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


_CONNECTORS = frozenset({"of", "upon", "de", "da", "do", "del", "la", "le", "du", "am", "sur", "en", "for", "and",
                         "&", "the"})


def _proper(text: str | None) -> str | None:
    """A captured name or place without trailing words that are not part of it ("Lisbon Monday")."""
    if not text:
        return None
    tokens = text.split()
    while len(tokens) > 1 and (tokens[-1].lower().rstrip(".") in _NOT_PART_OF_NAMES
                               or tokens[-1].lower() in _CONNECTORS):
        tokens.pop()
    if not tokens or tokens[0].lower() in _NOT_NAMES:
        return None
    return " ".join(tokens)


def _person(match: re.Match[str], group: str = "name") -> str | None:
    """The name in ``group``, or None when it is a stop word or reads as a verb with its object."""
    name = _proper(match.group(group))
    if name is None:
        return None
    if name.endswith("'s"):
        name = name[:-2]
    if re.fullmatch(r"(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof)\.?", name):
        return None
    following = _words(match.string[match.end(group):match.end(group) + 20])
    if following and following[0] in _OBJECT_WORDS:
        return None
    return name


def _role_of(match: re.Match[str]) -> str:
    return " ".join(f"{match.group('keep') or ''} {match.group('role')}".lower().split())


def _thing(phrase: str, *, habit: bool = False) -> tuple[str, str] | None:
    """(subject, wording for the sentence) of a liked thing or a habit's object, or None when it is not a thing.

    A leading "my" becomes "user's" in the subject ("user's job"), any "my" becomes "their" in the sentence. A
    habit may involve people ("call my mum") and start with a preposition ("cycle to work").
    """
    phrase = " ".join(phrase.split()).strip(" '\"")
    words = _words(phrase)
    if not words or len(words) > _MAX_THING_WORDS:
        return None
    if any(w in _NOT_THINGS_ANYWHERE for w in words):
        return None
    if habit:
        if words[0] in _NOT_HABITS_FIRST:
            return None
    elif (words[0] in _NOT_THINGS_FIRST and not (words[0] in ("a", "an") and len(words) > 1)) or any(
            w in _PEOPLE_WORDS for w in words):
        return None  # "a good crossword" is a thing, "a" alone is not
    elif words[0] in ("my", "our") and any(w in _PETS for w in words):
        return None  # "I love my dog": affection, not taste
    said = re.sub(r"\bmy\b", "their", phrase, flags=re.I)
    subject = said.lower()
    if words[0] == "my":
        subject = "user's" + subject[len("their"):]
    return subject, said


def _third_person(verb: str) -> str:
    verb = " ".join(verb.lower().split())
    if verb in ("can't stand", "cannot stand", "can't bear", "cannot bear"):
        return verb.replace("cannot", "can't")
    return _HABITS[verb][1] if verb in _HABITS else f"{verb}s"


def _date(said: str) -> str:
    """The date as said, without commas, with its month capitalised: "23rd april" -> "23rd April"."""
    words = said.replace(",", " ").split()
    return " ".join(_MONTHS.get(w.lower().rstrip("."), w) for w in words)


def _ended(relation: Relation, what: str) -> ExtractedFact:
    return _fact("user", relation, f"{ENDED} {what}")
