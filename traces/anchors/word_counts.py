"""Which words are English and how English writes them (``traces/data/vocabulary.tsv``), and the thresholds on
those counts that tell a name from a word capitalised for style, set on the dev half of ``feltsense eval anchors``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

VOCABULARY_PATH = Path(__file__).parent.parent / "data" / "vocabulary.tsv"

COMMON_COUNT = 5
"""A word English writes in lower case at least this often (in the vocabulary's text) can be told to be capitalised
for style; below it ("kettle", 4) a capital is read as a name."""
NAME_PART_RATIO = 0.15
"""A word capitalised inside a sentence at least this share of the time can be part of a name ("New" York,
"White" House); below it, a capital is style ("Last" Christmas, "Good" Idea, "Team Leader")."""
NAME_START_RATIO = 0.05
"""A capitalised word starting a sentence before another capitalised word is dropped from the name when it is
capitalised inside a sentence less than this share of the time ("Last" Christmas, "Good" Idea, "Yesterday"
Jake); "New" York (0.15), "White" House and "Big" Ben's kind stay."""
NAME_RATIO = 0.5
"""A word capitalised inside a sentence at least this share of the time is a name even at a sentence start
("Jack", "Henry"; not "Sunny", "Max", "Big")."""
REPEAT_MAX_COUNT = 20
"""A repeated word is an anchor only when English writes it in lower case at most this often in the vocabulary's
text: "marathon" (5), "laundry" (20), not "hotel" (39), "home" (530) or "money" (591).

Set on the dev half, one at a time around the others (precision / recall): COMMON_COUNT 3: 0.972 / 0.900, 5: 0.972 /
0.905, 10: 0.961 / 0.911; NAME_PART_RATIO 0.1: 0.961 / 0.905, 0.15: 0.972 / 0.905, 0.3: 0.977 / 0.889; NAME_RATIO
0.3 and 0.5: 0.972 / 0.905, 0.7: 0.972 / 0.900; REPEAT_MAX_COUNT 10: 0.972 / 0.900, 20: 0.972 / 0.905, 30: 0.966 /
0.905 (75 would add "wedding", 58, and "contract", 71, at 0.93 precision)."""
_MIN_REPEAT_LENGTH = 4


# -- the vocabulary ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """How often each word is written in lower case, and capitalised inside a sentence, in ordinary text."""

    lower: dict[str, int]
    capital: dict[str, int]

    def styled(self, word: str, ratio: float = NAME_PART_RATIO) -> bool:
        """A word seen often enough in lower case, and capitalised inside a sentence under ``ratio`` of the
        time: a capital on it is style ("I Feel", the "Insurance Premium")."""
        lower, capital = self.lower.get(word, 0), self.capital.get(word, 0)
        return lower >= COMMON_COUNT and capital < ratio * (lower + capital)

    def lower_count(self, word: str) -> int:
        return self.lower.get(word, 0)

    def name_ratio(self, word: str) -> float:
        """The share of its inner-sentence uses that are capitalised (smoothed: an unseen word is 0.5)."""
        capital = self.capital.get(word, 0)
        return (capital + 1) / (capital + self.lower.get(word, 0) + 2)


def read_vocabulary(path: Path) -> Vocabulary:
    lower: dict[str, int] = {}
    capital: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        word, lower_count, capital_count = line.split("\t")
        lower[word], capital[word] = int(lower_count), int(capital_count)
    return Vocabulary(lower, capital)


@cache
def vocabulary() -> Vocabulary:
    return read_vocabulary(VOCABULARY_PATH)
