"""Text handling shared by the lexical index, anchor extraction and anchor matching.

One tokenizer for all three, so a word the index stores, an anchor the write-time pass records and a word in
the user's message always compare equal when they should ("walked" ~ "walk", "dogs" ~ "dog", "Luna's" ~ "luna").
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't
    she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    just really also maybe get got yeah yes ok okay oh hey hi hello thanks thank im ive dont cant
    like lot lots kind sort stuff thing things gonna wanna actually honestly pretty quite well
    """.split()
)


def stem(word: str) -> str:
    """A deliberately light suffix stripper: enough to meet "walked" and "walk", never clever."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    if word.endswith("ly") and len(word) > 5:
        return word[:-2]
    if word.endswith("es") and word[-3] in "sxz" and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-cased words of a text, apostrophes normalised."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def terms(text: str) -> list[str]:
    """Index terms: words without stopwords, stemmed. Used by the lexical leg and anchor matching."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


@lru_cache(maxsize=65_536)
def anchor_key(anchor: str) -> tuple[str, ...]:
    """The comparable form of an anchor: its index terms ("the park" -> ("park",))."""
    return tuple(terms(anchor))


@lru_cache(maxsize=65_536)
def _anchor_index(anchors: tuple[str, ...]) -> tuple[frozenset[str], tuple[tuple[str, tuple[str, ...]], ...]]:
    keyed = tuple((anchor, key) for anchor in anchors if (key := anchor_key(anchor)))
    return frozenset(term for _, key in keyed for term in key), keyed


def matched_anchors(message_terms: frozenset[str], anchors: tuple[str, ...]) -> tuple[str, ...]:
    """Anchors all of whose terms occur in the message (given as the set of its index terms)."""
    every_term, keyed = _anchor_index(anchors)
    if message_terms.isdisjoint(every_term):  # the common case, answered without looking at each anchor
        return ()
    return tuple(anchor for anchor, key in keyed if message_terms.issuperset(key))
