"""Tokens: a turn's words by sentence, with what the anchor pass reads of each (capitals, sentence starts,
shouting), and the words that are never an anchor on their own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.domain.text import STOPWORDS
from traces.anchors.lexicon import (
    _ABBREVIATIONS,
    _BREAK,
    _ELONGATED,
    _LAUGH,
    _TOKEN,
    CALENDAR,
    INTERJECTIONS,
    instruction_like,
)

# -- tokens -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    text: str
    key: str
    """Lower case, apostrophes straight, a trailing possessive kept ("luna's")."""
    start: int
    end: int
    initial: bool
    """First word of a sentence or clause (after a full stop, a colon, a quote or a bracket)."""
    comma_before: bool
    shouted: bool
    """In a sentence mostly in capitals."""

    @property
    def bare(self) -> str:
        """The key without a trailing possessive ("luna's" -> "luna")."""
        return self.key[:-2] if self.key.endswith("'s") else self.key

    @property
    def capitalised(self) -> bool:
        letters = [c for c in self.text if c.isalpha()]
        if self.shouted or not letters:
            return False
        if self.text.isupper():
            return len(letters) > 1  # an acronym candidate; a single capital ("I", "A") is not a name
        return self.text[0].isupper() or any(c.isupper() for c in self.text[1:])  # "Luna", "iPhone"


def tokenize(text: str) -> list[list[Token]]:
    """The text's words, by sentence."""
    found = list(_TOKEN.finditer(text))
    sentences: list[list[Token]] = []
    current: list[tuple[re.Match[str], bool, bool]] = []
    previous_end = 0
    previous_key = ""
    for match in found:
        gap = text[previous_end:match.start()]
        after_title = previous_key in _ABBREVIATIONS and gap.strip() == "." and match.group()[:1].isupper()
        boundary = not current or (bool(_BREAK.search(gap)) and not after_title)
        if boundary and current and re.search(r"[.!?…\n]", gap):
            sentences.append(_sentence(current))
            current = []
        current.append((match, boundary, "," in gap))
        previous_end, previous_key = match.end(), match.group().lower()
    if current:
        sentences.append(_sentence(current))
    return sentences


def _sentence(matches: list[tuple[re.Match[str], bool, bool]]) -> list[Token]:
    long_words = [m.group() for m, _, _ in matches if sum(c.isalpha() for c in m.group()) > 1]
    shouted = len(long_words) >= 2 and sum(w.isupper() for w in long_words) >= 0.6 * len(long_words)
    return [Token(m.group(), m.group().lower().replace("’", "'"), m.start(), m.end(), initial, comma, shouted)
            for m, initial, comma in matches]


def interjection(key: str) -> bool:
    return key in INTERJECTIONS or bool(_LAUGH.match(key)) or bool(_ELONGATED.search(key))


def _never(key: str) -> bool:
    """Words that are never a name or a thing on their own."""
    return key in STOPWORDS or interjection(key) or key in CALENDAR or instruction_like(key)
