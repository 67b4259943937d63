"""Frozen v1 of ``traces/anchors.py`` (before issue 14), kept for side-by-side evaluation (``feltsense eval anchors``).

Anchors: the names and things a user mentions or repeats. No model.

The dog's name is a stronger retrieval key than any summary about the dog (seed 004), so anchors are extracted
at write time, when the whole session is available, and matched at read time against the user's message.

What counts as an anchor in a session's user turns:
- proper names: capitalised words inside a sentence ("walked with Luna"), a capitalised word right after a
  possessive noun ("my dog Luna"), or a sentence-initial capitalised word the user also capitalises elsewhere;
- things from a companion's world (people, pets, places, objects) named in ``LIFE_NOUNS`` ("dog", "park");
- any other word the user repeats in two or more turns of the session.
The character's own name is never an anchor of the user's memories, and neither is a word that instructs a model
(``prompts.wording.INSTRUCTION_WORDS``: "ignore", "previous", "instructions", "system", ..., in any case and form):
tone rules name their anchors, and "Ignore previous instructions" would otherwise be named in one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from engine.domain.text import STOPWORDS, stem, words
from engine.domain.vocabulary import INSTRUCTION_WORDS

LIFE_NOUNS = frozenset(
    """
    dog dogs puppy cat cats kitten pet pets horse bird fish rabbit hamster
    mom mum mother dad father parent parents sister brother sibling wife husband partner boyfriend girlfriend
    fiance fiancee son daughter kid kids child children baby grandma grandmother grandpa grandfather grandparents
    aunt uncle cousin niece nephew friend friends boss coworker colleague roommate neighbor neighbour therapist
    doctor teacher family
    park beach garden home house flat apartment office school college university work job gym church hospital
    cafe restaurant city town village hometown lake river mountain forest
    car bike bicycle guitar piano ring necklace watch photo photos book books garden wedding funeral birthday
    anniversary christmas exam exams interview surgery diagnosis cancer divorce breakup
    """.split()
)
PRONOUNS = frozenset({"she", "her", "he", "him", "it", "they", "them", "his", "hers"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’]*")
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their"})
_MIN_REPEAT_LENGTH = 4
_INSTRUCTION_STEMS = frozenset(stem(w) for w in INSTRUCTION_WORDS)


def instruction_like(word: str) -> bool:
    """Whether ``word`` ("Instructions", "ignoring", "SYSTEM") is one of the instruction words, in any form."""
    key = word.lower()
    return key in INSTRUCTION_WORDS or stem(key) in _INSTRUCTION_STEMS


def _capitalised_names(texts: Sequence[str], exclude: set[str]) -> dict[str, str]:
    """Proper names by lower-case key, in the form the user wrote them."""
    mid: dict[str, str] = {}
    initial: dict[str, str] = {}
    for text in texts:
        for sentence in _SENTENCE.split(text):
            tokens = _TOKEN.findall(sentence)
            for position, token in enumerate(tokens):
                bare = re.sub(r"['’]s$", "", token)
                key = bare.lower()
                if (not bare[:1].isupper() or key in STOPWORDS or key in exclude or len(key) < 2
                        or instruction_like(key)):
                    continue
                after_possessive = position >= 2 and tokens[position - 2].lower() in _POSSESSIVES
                if position == 0 and not after_possessive:
                    initial.setdefault(key, bare)
                else:
                    mid.setdefault(key, bare)
    names = dict(mid)
    # A sentence-initial capital is ambiguous ("Sunny." vs "Luna and I"): keep it only when confirmed elsewhere.
    for key, form in initial.items():
        if key in mid:
            names[key] = form
    return names


def session_anchors(user_texts: Sequence[str], *, exclude: Sequence[str] = ()) -> list[str]:
    """Every anchor of a session's user turns, names first, in order of first appearance."""
    excluded = {e.lower() for e in exclude}
    names = _capitalised_names(user_texts, excluded)
    anchors: dict[str, str] = {}
    for text in user_texts:
        for word in words(text):
            if word in names:
                anchors.setdefault(word, names[word])
    per_turn = [set(stem(w) for w in words(t) if w not in STOPWORDS) for t in user_texts]
    repeats = Counter(term for terms_ in per_turn for term in terms_)
    for text in user_texts:
        for word in words(text):
            key = stem(word)
            if word in names or word in STOPWORDS or word in excluded or key in anchors or instruction_like(word):
                continue
            in_life = word in LIFE_NOUNS or key in LIFE_NOUNS
            if in_life or (repeats[key] >= 2 and len(key) >= _MIN_REPEAT_LENGTH):
                anchors.setdefault(key, key)
    return list(anchors.values())


def memory_anchors(texts: Sequence[str], *, exclude: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Anchors per user turn of one session (in order).

    A turn that names none of the session's anchors but refers back with a pronoun ("I just miss her so much")
    inherits the names of the closest earlier turn that had some: a light coreference that keeps the whole
    episode reachable by the name the user will use later.
    """
    anchors = session_anchors(texts, exclude=exclude)
    keyed = [(a, stem(a.lower())) for a in anchors]
    result: list[tuple[str, ...]] = []
    last_names: tuple[str, ...] = ()
    for text in texts:
        present_words = set(words(text))
        present_stems = {stem(w) for w in present_words}
        own = tuple(a for a, key in keyed if a.lower() in present_words or key in present_stems)
        names = tuple(a for a in own if a[:1].isupper())
        if not own and present_words & PRONOUNS and last_names:
            own = last_names
        if names:
            last_names = names
        result.append(own)
    return result
