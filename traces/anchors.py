"""Anchors: the people, pets, places and things a user names, and the things they repeat. No model.

The dog's name is a stronger retrieval key than any summary about the dog (seed 004), so anchors are extracted
at write time, when the whole session is available, and matched at read time against the user's message
(``engine.domain.text.matched_anchors``: an anchor matches when all of its words are in the message, so "Copper Kettle"
matches "back at the Copper Kettle", and not "a copper pan").

What counts as an anchor in a session's user turns, as the user wrote it:
- a name, kept whole ("New Year's Eve", "Copper Kettle", "Brightline Studios", "Mr. Li"): capitalised words inside
  a sentence, unless they are common words the user capitalised for style ("I Feel", "a Current Account"). A
  capital at a sentence start counts only on more evidence: the user capitalises the word inside a sentence too
  (in this session or an earlier one), English rarely writes it in lower case ("Jack"), it is no English word
  and does something ("Daniel broke up with me", "Marek and I"), it is what a relation is ("Max is my cat"), or
  it is given as a name ("we named her Pepper"). Once established, a name counts wherever the user writes it;
- a relation or a pet that is someone's in particular ("my sister", "her husband's sisters", "my mom and dad",
  "the kids", "that friend", "I have a dog"), with a bare "Mom" or "grandma" counting as a name; "my sister Ana"
  gives "sister" and "Ana", and "my bf jake" gives "jake" (a word English does not have);
- a holiday, in any case ("christmas", "mother's day");
- the routine places of seed 004's story, after "in the" ("in the park", "on the beach");
- a thing the user names in two turns, of this session or an earlier one (``earlier``), in a noun phrase ("the
  marathon", "my blog") and rarer than the everyday words of English ("laundry"; never "home", "time", "money").
Never an anchor: stopwords, interjections ("Wow", "Omg", "Hahaha"), shouted words ("THE SCAN WAS CLEAR!!!"; an
all-caps word counts only as an acronym that is no English word, "CP" or "NYC"), days and months, nationalities
and languages, a name the user addresses ("Thanks, Nate!", "Hi, Susan.": in a companion's conversation, the
character), the character's own name and a nickname that starts it ("Mel" for Melanie), the possessions of
"your" (the character's), and any word that instructs a model (``prompts.wording.INSTRUCTION_WORDS``: "ignore",
"previous", "instructions", "system", ..., in any case and form): tone rules name their anchors, and "Ignore
previous instructions" would otherwise be named in one.

Which words are English, how often English writes a word in lower case, and how often it capitalises it inside
a sentence come from ``traces/data/vocabulary.tsv``: counts over the train-licensed text sets (GoEmotions, XED,
EmoryNLP, iSarcasmEval, MUStARD), written by ``python -m eval.build_vocabulary``. Scored on hand-labelled user
turns of the evaluation sets beside the frozen v1 by ``feltsense eval anchors`` (``eval/data/anchors_labelled.md``);
the constants below were set on its dev half.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engine.domain.text import STOPWORDS, stem
from engine.domain.vocabulary import INSTRUCTION_WORDS

VOCABULARY_PATH = Path(__file__).parent / "data" / "vocabulary.tsv"

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

PRONOUNS = frozenset({"she", "her", "he", "him", "it", "they", "them", "his", "hers"})

# -- word lists -------------------------------------------------------------------------------------------------

_FAMILY = """
    mom mum mother mommy mama dad father daddy papa parent parents sister sis brother sibling siblings
    wife wives husband hubby spouse partner boyfriend girlfriend bf gf fiance fiancé fiancee fiancée ex
    son daughter kid child children baby babies grandma grandmother grandpa grandfather grandparent granny nana
    grandson granddaughter grandkid grandchild grandchildren aunt auntie uncle cousin niece nephew family twin
    stepmom stepmother stepdad stepfather stepson stepdaughter stepsister stepbrother in-laws
""".split()
_FRIENDS = "friend bestie bff pal buddy roommate flatmate housemate".split()
_ROLES = """
    boss manager supervisor coworker co-worker colleague mentor teacher therapist counselor counsellor coach tutor
    landlord landlady neighbor neighbour classmate teammate doctor professor girl boy
""".split()
_PETS = "dog puppy pup doggy doggo cat kitten kitty pet horse pony bunny rabbit hamster parrot snake turtle".split()
_PLURALS = {"child": "children", "wife": "wives", "baby": "babies", "puppy": "puppies", "buddy": "buddies",
            "kitty": "kitties", "pony": "ponies", "bunny": "bunnies", "grandchild": "grandchildren",
            "bestie": "besties", "bff": "bffs", "family": "families"}


def _with_plurals(nouns: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for noun in nouns:
        out.add(noun)
        out.add(_PLURALS.get(noun, noun if noun.endswith("s") else noun + "s"))
    return frozenset(out)


DEFINITE_RELATIONS = _with_plurals([*_FAMILY, *_FRIENDS])
"""Relations that "the" or "that" can point at ("the wife", "the kids", "that friend")."""
PETS = _with_plurals(_PETS)
RELATIONS = DEFINITE_RELATIONS | _with_plurals(_ROLES) | PETS
BARE_KIN = frozenset("mom mum mommy mama dad daddy papa grandma grandpa granny nana grandad granddad".split())
"""Kinship words that work as a name without a determiner ("Mom called", "cookies made by grandma")."""
HOLIDAYS = frozenset("christmas xmas thanksgiving easter halloween hanukkah chanukah diwali ramadan passover".split())
_HOLIDAY_PHRASES = (
    ("new", "year's", "eve"), ("new", "year's", "day"), ("christmas", "eve"), ("christmas", "day"),
    ("mother's", "day"), ("father's", "day"), ("valentine's", "day"), ("valentines", "day"), ("boxing", "day"),
    ("memorial", "day"), ("labor", "day"), ("independence", "day"), ("st", "patrick's", "day"),
)
_HOLIDAY_STARTS: dict[str, list[tuple[str, ...]]] = {}
for _phrase in _HOLIDAY_PHRASES:
    _HOLIDAY_STARTS.setdefault(_phrase[0], []).append(_phrase)
ROUTINE_PLACES = frozenset({"park"})
"""Seed 004's "the park": where the dog was walked every morning. Other common places are not anchors ("the
beach" of a holiday, "home"); this one is kept for the story the engine is built around."""
_LOCATIVES = frozenset("in at to through around across from near by on into".split())
CALENDAR = frozenset("""
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
""".split())
DEMONYMS = frozenset("""
    american americans british english scottish irish welsh french german spanish italian portuguese dutch
    swedish danish norwegian finnish polish russian ukrainian greek turkish chinese japanese korean vietnamese
    thai indian pakistani filipino indonesian australian canadian mexican brazilian argentinian colombian
    african nigerian egyptian moroccan arab arabic persian iranian israeli jewish muslim catholic
    european asian latino latina hispanic cuban jamaican haitian mandarin cantonese hindi urdu swahili hebrew
    caucasian western eastern northern southern
""".split())
INTERJECTIONS = frozenset("""
    oh ohh ah ahh aw aww awww eh uh uhh um umm hmm hm mm mmm huh wow woah whoa omg omfg lol lmao lmfao rofl
    haha hahaha hah heh hehe yay yey ugh ew eww oops whoops yikes phew damn dang darn gosh geez jeez wtf ffs
    ooh oooh yep yup nope nah meh yeah yes ya yea no hi hey hello hiya yo bye goodbye thanks thank please sorry
    okay ok sure alright congrats congratulations cheers ouch wow bravo hooray hurray welp alas duh dude bro
    lord jesus christ god gee boo
""".split())
_DEMONYM = re.compile(r"(?:ese|(?:north|south|east|west|mid)\w*ern)$")  # "Vietnamese", "Midwestern"
_ELONGATED = re.compile(r"(.)\1\1")
_LAUGH = re.compile(r"^(?:(?:[hb]?a+h+)+a*|(?:h+[ae]+)+h*|(?:lo)+l+|l+m+f*a+o+|x+d+)$")
TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "sir"})
_ABBREVIATIONS = TITLES | {"st", "jr", "sr", "mt", "no", "vs"}
_ARTICLES = frozenset({"the", "a", "an"})
_CONNECTORS = frozenset({"of", "de", "del", "da", "van", "von"})
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their"})
_POINTERS = frozenset({"the", "that", "this", "these", "those"})
_NOT_A_POSSESSOR = frozenset({"it's", "that's", "what's", "he's", "she's", "there's", "here's", "let's", "who's",
                              "where's", "how's", "when's", "one's", "today's", "tonight's", "yesterday's"})
_MODIFIERS_IN_STOPWORDS = frozenset({"then", "two", "only", "very", "other"})
_NOT_POSSESSED_AFTER = frozenset({"own"})
_HAVE = frozenset({"have", "has", "had", "got", "adopted", "rescued", "bought"})
_OWNERS = frozenset({"i", "we", "just", "finally", "recently", "also", "now"})
_INDEFINITE = frozenset({"a", "an", "two", "three", "another", "new"})
_DETERMINERS = frozenset({"a", "an", "the", "your", "any", "every", "some", "other", "single", "each", "no",
                          "another", "their", "his", "her", "our", "my", "this", "that"})
_GREETINGS = frozenset("""
    hi hey hello hiya yo thanks thank bye goodbye cheers congrats congratulations dear morning evening night
    ok okay yes yeah yep yup no nope wow aww oh well haha lol great awesome cool nice sure right listen look
    sorry welcome
""".split())
_AFTER_ADDRESS = frozenset("""
    i i'm i've i'll i'd you you're you've we we're let's please can could would will do did are have what how
    why where when who in listen look thanks thank come guess remember
""".split())
_NAMING = frozenset({"named", "called", "name's", "nicknamed"})
_NOUN_LEADS = _DETERMINERS | _POINTERS | frozenset(
    {"some", "more", "much", "many", "of", "for", "about", "with", "which", "what", "whose"})
_ABSTRACT = re.compile(r"(?:tions?|sions?|ments?|ness|ities|ity|ances?|ences?|ships?|isms?)$")
NAME_FOLLOWERS = frozenset("""
    and is was has had said says told tells left leaves broke dumped cheated called calls texted texts died passed
    got gets went goes came comes asked asks wants wanted loves loved hates hated thinks thought knows knew made
    makes gave gives kept keeps took takes just always never still finally moved lives lived works worked started
    will would can could did does doesn't didn't isn't wasn't won't can't couldn't wouldn't hasn't seems seemed
    looks looked sent sends bought found lost won met
""".split())
_INSTRUCTION_STEMS = frozenset(stem(w) for w in INSTRUCTION_WORDS)

_TOKEN = re.compile(r"[^\W\d_](?:[^\W_]|['’](?=[^\W\d_])|-(?=[^\W_]))*")
_BREAK = re.compile(r"[.!?…]|\n|[:;\"“”()\[\]]|\s[-–—]\s")


def instruction_like(word: str) -> bool:
    """Whether ``word`` ("Instructions", "ignoring", "SYSTEM") is one of the instruction words, in any form."""
    key = word.lower()
    return key in INSTRUCTION_WORDS or stem(key) in _INSTRUCTION_STEMS


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


# -- one session ------------------------------------------------------------------------------------------------

Key = tuple[str, ...]
NAME, RELATION, PLACE, THING = "name", "relation", "place", "thing"
_PEOPLE = frozenset({NAME, RELATION})


@dataclass(frozen=True)
class _Mention:
    start: int
    kind: str
    form: str


def _key(sentence: Sequence[Token], first: int, last: int) -> Key:
    return tuple(sentence[i].bare if i == last else sentence[i].key for i in range(first, last + 1))


def _at(sentence: Sequence[Token], index: int, key: Key) -> bool:
    """Whether the words from ``index`` on are ``key`` (its last word without a possessive)."""
    end = index + len(key)
    return end <= len(sentence) and all(
        (sentence[i].bare if i == end - 1 else sentence[i].key) == word
        for i, word in zip(range(index, end), key, strict=True))


def _form(text: str, sentence: Sequence[Token], first: int, last: int) -> str:
    return re.sub(r"['’]s$", "", text[sentence[first].start:sentence[last].end])


def _relation_base(key: str) -> str | None:
    """The relation a word names ("sisters", "mother-in-law", "ex-girlfriend's" -> "girlfriend"), or None."""
    word = key[:-2] if key.endswith("'s") else key
    word = re.sub(r"^(?:ex|step|half)-", "", re.sub(r"-in-laws?$", "", word))
    return word if word in RELATIONS else None


def _pieces(sentence: Sequence[Token]) -> list[list[int]]:
    """Runs of adjacent capitalised words ("of" may join two), split at words that are never names and at
    relations ("Uncle" of "Uncle Bill" is a relation; "Bill" the name)."""
    pieces: list[list[int]] = []
    piece: list[int] = []

    def close() -> None:
        while piece and sentence[piece[-1]].key in _CONNECTORS | TITLES:
            piece.pop()
        if piece:
            pieces.append(list(piece))
        piece.clear()

    for i, token in enumerate(sentence):
        joins = bool(piece) and not token.initial and not token.comma_before
        nxt = sentence[i + 1] if i + 1 < len(sentence) else None
        opens_title = (  # "watched My Fair Lady": a capitalised "My" inside a sentence starts a title
            token.key in STOPWORDS and token.key not in _ARTICLES and token.text.istitle() and not token.shouted
            and not token.initial and not token.comma_before and not token.key.startswith("i")
            and nxt is not None and nxt.capitalised and not nxt.text.isupper()
            and not nxt.initial and not nxt.comma_before
            and not _never(nxt.bare))
        if opens_title or (token.capitalised and not (_never(token.bare) and token.bare not in TITLES) and (
                _relation_base(token.key) is None)):
            if not joins:
                close()
            piece.append(i)
        elif (joins and token.key in _CONNECTORS and i + 1 < len(sentence) and sentence[i + 1].capitalised
              and not sentence[i + 1].initial and not sentence[i + 1].comma_before):
            piece.append(i)
        else:
            close()
    close()
    return pieces


def _addressed(sentence: Sequence[Token], first: int, last: int) -> bool:
    """Whether the name is one the user addresses ("Thanks, Nate!", "Hi, Susan.", "Jeff, I'm off")."""
    start = sentence[first]
    before = sentence[first - 1] if first > 0 and not start.initial else None
    after = sentence[last + 1] if last + 1 < len(sentence) else None
    if before is not None and _greeting(sentence, first - 1):
        return True
    # ", Nate." at a sentence end, or ", James," near its start ("Yes, Mr. Mason, I checked"); not an apposition
    # ("my sister, Ana.") and not a list ("Pot, Ganja, Mary Jane")
    listed = before is not None and before.capitalised and not interjection(before.bare)
    if start.comma_before and before is not None and _relation_base(before.key) is None and not listed and (
            after is None or after.initial or (after.comma_before and first <= 3)):
        return True
    return start.initial and after is not None and after.comma_before and after.key in _AFTER_ADDRESS


def _named(sentence: Sequence[Token], index: int) -> bool:
    """Whether the word at ``index`` is given as a name: "named her Pepper", "his name is Will"."""
    for back in range(1, 5):
        j = index - back
        if j < 0 or sentence[j + 1].initial:
            return False
        if sentence[j].key in _NAMING or (sentence[j].key in {"is", "was"} and j > 0
                                          and sentence[j - 1].key == "name"):
            return True
    return False


def _acts_or_ends(sentence: Sequence[Token], index: int) -> bool:
    """Whether the word at ``index`` ends its clause or the next one acts ("jake left", "luna died", "luna.")."""
    after = sentence[index + 1] if index + 1 < len(sentence) else None
    return after is None or after.initial or after.comma_before or after.key in NAME_FOLLOWERS or (
        after.key.isalpha() and after.key.endswith("ed"))


def _greeting(sentence: Sequence[Token], index: int) -> bool:
    """Whether the word at ``index`` greets or thanks, opening its clause: "Hi", "Thanks", "thank you", "Oh hey";
    not "I'm sorry"."""
    token = sentence[index]
    if token.key == "you" and index > 0 and sentence[index - 1].key == "thank":
        index -= 1
    elif token.key not in _GREETINGS:
        return False
    opening = sentence[index]
    return opening.initial or opening.comma_before or (index > 0 and _greeting(sentence, index - 1))


class _Session:
    """The evidence of one session (and the same user's earlier turns) about what the user names."""

    def __init__(self, texts: Sequence[str], exclude: Sequence[str], earlier: Sequence[str]) -> None:
        self.vocabulary = vocabulary()
        self.exclude = {e.lower() for e in exclude if e}
        self.turns = [tokenize(t) for t in texts]
        self.earlier = [tokenize(t) for t in earlier]
        self.confirmed: set[str] = set()
        self.addressed: set[Key] = set()
        for turn in [*self.turns, *self.earlier]:  # names inside sentences confirm names at sentence starts
            for sentence in turn:
                for first, last in self.names(sentence, inside_only=True):
                    self.confirmed.update(sentence[i].bare for i in range(first, last + 1))

    def excluded(self, key: Key) -> bool:
        joined = " ".join(key)
        # the character's name, or a nickname that starts it ("Mel" for Melanie)
        return any(joined == e or (len(key) == 1 and len(joined) >= 2 and e.startswith(joined)) for e in self.exclude)

    # -- names

    def style(self, token: Token, ratio: float = NAME_PART_RATIO) -> bool:
        """A common word, rarely capitalised inside a sentence: a capital on it is style, not a name."""
        return (token.bare not in self.confirmed and not token.text.isupper()
                and self.vocabulary.styled(token.bare, ratio))

    def english(self, key: str) -> bool:
        return self.vocabulary.lower_count(key) >= 3

    def _initial_name(self, sentence: Sequence[Token], index: int) -> bool:
        """Whether a capitalised word alone at a sentence start is a name."""
        token, vocabulary = sentence[index], self.vocabulary
        if token.bare in self.confirmed or (token.text.isupper() and not self.english(token.bare)):
            return True
        if vocabulary.capital.get(token.bare, 0) >= 2 and vocabulary.name_ratio(token.bare) >= NAME_RATIO:
            return True
        following = [t.key for t in sentence[index + 1:index + 6]]
        if not following:
            return False
        acting = following[0] in NAME_FOLLOWERS or (following[0].isalpha() and following[0].endswith("ed"))
        if (not any(self.english(w) for w in {token.bare, stem(token.bare)}) and acting
                and not token.bare.endswith(("ing", "ed", "ly"))):
            return True  # a word English does not have, doing something: "Daniel broke up with me", "Marek and I"
        return len(following) >= 3 and following[0] in {"is", "was"} and following[1] in _POSSESSIVES and any(
            _relation_base(word) for word in following[2:])  # "Max is my mother's cat"

    def names(self, sentence: Sequence[Token], *, inside_only: bool = False) -> list[tuple[int, int]]:
        """(first, last) token of each name in the sentence; names the user addresses are noted, not returned."""
        found = []
        for piece in _pieces(sentence):
            if sentence[piece[0]].initial:
                if inside_only:
                    continue
                stripped = 0
                while stripped < len(piece) and self.style(sentence[piece[stripped]], NAME_START_RATIO):
                    stripped += 1
                if stripped == len(piece):
                    continue
                if not stripped and len(piece) == 1 and not self._initial_name(sentence, piece[0]):
                    continue
                inside = stripped > 0
                piece = piece[stripped:]
            else:
                inside = True
            tokens = [sentence[i] for i in piece]
            named = _named(sentence, piece[0])
            if inside and not named and all(self.style(t) for t in tokens):
                continue  # "I Feel", "a Current Account"
            if len(tokens) == 1 and tokens[0].text.isupper() and self.english(tokens[0].bare):
                continue  # an English word in capitals is shouted, not an acronym
            first, last = piece[0], piece[-1]
            key = _key(sentence, first, last)
            if len(key) == 1 and (key[0] in DEMONYMS or _DEMONYM.search(key[0]) or len(key[0]) < 2):
                continue
            if self.excluded(key):
                continue
            if _addressed(sentence, first, last):
                self.addressed.add(key)
                continue
            found.append((first, last))
        return found

    @staticmethod
    def holidays(sentence: Sequence[Token]) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for i in range(len(sentence)):
            found.extend((i, i + len(phrase) - 1) for phrase in _HOLIDAY_STARTS.get(sentence[i].key, ())
                         if _at(sentence, i, phrase))
            if sentence[i].bare in HOLIDAYS and not any(a <= i <= b for a, b in found):
                found.append((i, i))
        return found

    # -- relations

    def _related(self, sentence: Sequence[Token], index: int) -> bool:
        """Whether the relation at ``index`` is someone's in particular: "my sister", "her husband's sisters",
        "my mom and sister", "the kids", "that friend", "I have a dog", or a bare "Mom"."""
        token = sentence[index]
        base = _relation_base(token.key)
        if base is None:
            return False
        j = index - 1
        modifiers = 0
        while j >= 0 and modifiers <= 3 and not sentence[j + 1].initial and not sentence[j + 1].comma_before:
            word = sentence[j].key
            if word in _POSSESSIVES:
                return sentence[j + 1].key not in _NOT_POSSESSED_AFTER
            if word.endswith("'s") and word not in _NOT_A_POSSESSOR:
                return _relation_base(word) is None or self._related(sentence, j)
            if word in _POINTERS:
                return base in DEFINITE_RELATIONS
            if word in {"and", "or", "&"}:
                earlier = next((k for k in range(j - 1, max(j - 4, -1), -1) if _relation_base(sentence[k].key)), None)
                return earlier is not None and self._related(sentence, earlier)
            if word in _INDEFINITE and base in PETS and any(
                    sentence[k].key in _HAVE and k > 0 and sentence[k - 1].key in _OWNERS
                    for k in range(max(j - 2, 0), j)):
                return True  # "I have a dog", "we just adopted a puppy"; not "what is it like to have a dog?"
            if word in STOPWORDS and word not in _MODIFIERS_IN_STOPWORDS:
                break
            modifiers += 1
            j -= 1
        if base in BARE_KIN:
            before = sentence[index - 1].key if index > 0 and not token.initial else ""
            return before not in _DETERMINERS
        # a capitalised relation before a name: "Uncle Bill", "Grandma Rose"
        following = sentence[index + 1] if index + 1 < len(sentence) else None
        return token.text[:1].isupper() and following is not None and following.capitalised and not (
            following.initial or following.comma_before)

    def relations(self, sentence: Sequence[Token], text: str) -> tuple[list[_Mention], list[tuple[int, int]]]:
        """The relations of a sentence, and the names that follow them ("my dog Luna", "my bf jake")."""
        mentions: list[_Mention] = []
        names: list[tuple[int, int]] = []
        for i, token in enumerate(sentence):
            if not self._related(sentence, i) or (_relation_base(token.key) in BARE_KIN and _addressed(sentence, i, i)):
                continue  # "Dad, I have to do my homework": the user talks to Dad, who is the character here
            following = sentence[i + 1] if i + 1 < len(sentence) else None
            if following is not None and _relation_base(following.key) and not token.key.endswith("'s") and (
                    not following.initial and not following.comma_before):
                continue  # "my ex boyfriend": the relation is the boyfriend
            first, last = i, i
            if i > 0 and sentence[i - 1].key in {"boy", "girl"} and token.bare == "friend":
                first = i - 1  # "my boy friend"
            if i + 2 < len(sentence) and sentence[i + 1].key == "in" and sentence[i + 2].bare == "law":
                last = i + 2  # "my mother in law"
            form = _form(text, sentence, first, last)
            mentions.append(_Mention(sentence[first].start, RELATION, form.lower() if token.shouted else form))
            after = last + 1
            if after < len(sentence) and not sentence[after].initial:
                name = sentence[after]
                if name.capitalised and not _never(name.bare) and _relation_base(name.key) is None:
                    end = after
                    while end + 1 < len(sentence) and sentence[end + 1].capitalised and not (
                            sentence[end + 1].initial or sentence[end + 1].comma_before):
                        end += 1
                    names.append((after, end))
                elif (name.text.isalpha() and name.text.islower() and not _never(name.bare)
                      and not any(self.vocabulary.lower_count(w) + self.vocabulary.capital.get(w, 0)
                                  for w in {name.bare, stem(name.bare)}) and _acts_or_ends(sentence, after)):
                    names.append((after, after))  # "my bf jake left": a word English does not have
        return mentions, names

    def places(self, sentence: Sequence[Token]) -> list[_Mention]:
        return [_Mention(t.start, PLACE, t.bare) for i, t in enumerate(sentence)
                if t.bare in ROUTINE_PLACES and i >= 2 and sentence[i - 1].key in _POSSESSIVES | {"the"}
                and sentence[i - 2].key in _LOCATIVES]

    # -- repeats

    def repeatable(self, sentence: Sequence[Token], index: int) -> bool:
        token = sentence[index]
        word = token.bare
        if len(word) < _MIN_REPEAT_LENGTH or not word.isalpha() or _never(word) or word in DEMONYMS:
            return False
        if _relation_base(word) or word in self.exclude or any(e.startswith(word) for e in self.exclude):
            return False
        if token.capitalised and not token.initial:
            return False  # a name, or style
        if word.endswith("ed") and not word.endswith("eed"):
            return False  # "lied", "exhausted": what the user did or felt, not a thing
        if word.endswith("ing") and not (index > 0 and sentence[index - 1].key in _DETERMINERS):
            return False  # "exploring", "touring"; "the wedding", "my training" are things
        if _ABSTRACT.search(word):
            return False  # "connections", "happiness": not a thing one can point back at
        if not self._in_noun_phrase(sentence, index):
            return False  # "my family motivates me"
        common = max(self.vocabulary.lower_count(word), self.vocabulary.lower_count(stem(word)))
        return common <= REPEAT_MAX_COUNT

    @staticmethod
    def _in_noun_phrase(sentence: Sequence[Token], index: int) -> bool:
        """Whether a determiner or a possessive leads to the word, over at most one other word ("the crowd",
        "my blog", "this magazine", "chocolate cookies" is not; "some chocolate cookies" is)."""
        for back in (1, 2):
            if index - back < 0 or sentence[index - back + 1].initial or sentence[index - back + 1].comma_before:
                return False
            word = sentence[index - back].key
            if word in _NOUN_LEADS or (word.endswith("'s") and word not in _NOT_A_POSSESSOR):
                return True
            if word in STOPWORDS:
                return False
        return False

    def repeats(self) -> dict[str, str]:
        """Stem -> form of the things the user names in two turns or more (this session's or earlier ones)."""
        turns_with: dict[str, int] = {}
        forms: dict[str, str] = {}
        for position, turn in enumerate([*self.turns, *self.earlier]):
            seen = set()
            for sentence in turn:
                for index, token in enumerate(sentence):
                    if self.repeatable(sentence, index):
                        key = stem(token.bare)
                        seen.add(key)
                        if position < len(self.turns):
                            forms.setdefault(key, token.bare)
            for key in seen:
                turns_with[key] = turns_with.get(key, 0) + 1
        return {key: form for key, form in forms.items() if turns_with[key] >= 2}


def _extract(texts: Sequence[str], exclude: Sequence[str], earlier: Sequence[str]) -> list[list[_Mention]]:
    """Every turn's mentions, in the order they occur."""
    session = _Session(texts, exclude, earlier)
    known: dict[Key, str] = {}
    holidays: set[Key] = set()  # written in any case ("christmas")
    others: list[list[_Mention]] = []
    for turn, text in zip(session.turns, texts, strict=True):
        found: list[_Mention] = []
        for sentence in turn:
            relations, after_relation = session.relations(sentence, text)
            found.extend(relations)
            found.extend(session.places(sentence))
            in_sentence = session.holidays(sentence)
            holidays.update(_key(sentence, first, last) for first, last in in_sentence)
            for first, last in [*in_sentence, *after_relation, *session.names(sentence)]:
                key = _key(sentence, first, last)
                if not session.excluded(key):
                    known.setdefault(key, _form(text, sentence, first, last))
        others.append(found)
    for key in session.addressed:
        known.pop(key, None)
    repeats = session.repeats()
    by_first: dict[str, list[tuple[Key, str]]] = {}
    for key, form in known.items():
        by_first.setdefault(key[0], []).append((key, form))
    result = []
    for turn, found in zip(session.turns, others, strict=True):
        mentions = list(found)
        for sentence in turn:
            i = 0
            while i < len(sentence):
                candidates = by_first.get(sentence[i].key, []) + by_first.get(sentence[i].bare, [])
                for key, form in sorted(candidates, key=lambda item: -len(item[0])):
                    # a name once established counts at a sentence start, or in lower case when it is no English
                    # word ("luna"); "Pepper" the dog, not the pepper in "salt and pepper"
                    if _at(sentence, i, key) and (sentence[i].capitalised or key in holidays
                                                  or not any(session.english(w) for w in key)):
                        mentions.append(_Mention(sentence[i].start, NAME, form))
                        i += len(key) - 1
                        break
                i += 1
            for i, token in enumerate(sentence):
                stemmed = stem(token.bare)
                if stemmed in repeats and session.repeatable(sentence, i):
                    mentions.append(_Mention(token.start, THING, repeats[stemmed]))
        mentions.sort(key=lambda m: m.start)
        result.append(mentions)
    # One form per anchor in a session, the first the user wrote ("Mom" and later "mom" are one anchor)
    forms: dict[str, str] = {}
    for mentions in result:
        for mention in mentions:
            forms.setdefault(mention.form.casefold(), mention.form)
    return [[_Mention(m.start, m.kind, forms[m.form.casefold()]) for m in mentions] for mentions in result]


def session_anchors(user_texts: Sequence[str], *, exclude: Sequence[str] = (),
                    earlier: Sequence[str] = ()) -> list[str]:
    """Every anchor of a session's user turns, names first, in order of first appearance."""
    mentions = [m for turn in _extract(user_texts, exclude, earlier) for m in turn]
    return list(dict.fromkeys([*(m.form for m in mentions if m.kind == NAME),
                               *(m.form for m in mentions if m.kind != NAME)]))


def memory_anchors(texts: Sequence[str], *, exclude: Sequence[str] = (), earlier: Sequence[str] = (),
                   inherit: bool = True) -> list[tuple[str, ...]]:
    """Anchors per user turn of one session (in order). ``earlier`` are the same user's turns of earlier sessions:
    they confirm names, and a thing said once there and once here is an anchor here.

    A turn that names none of the session's anchors but refers back with a pronoun ("I just miss her so much")
    inherits the people and pets of the closest earlier turn that had some: a light coreference that keeps the
    whole episode reachable by the name the user will use later. ``inherit=False`` leaves that out: each turn
    gets only what it names itself (how ``feltsense eval anchors`` scores a turn).
    """
    per_turn = _extract(texts, exclude, earlier)
    names_first = [m.form for turn in per_turn for m in turn if m.kind == NAME]
    order = {form: i for i, form in enumerate(dict.fromkeys(
        [*names_first, *(m.form for turn in per_turn for m in turn)]))}
    result: list[tuple[str, ...]] = []
    last_people: tuple[str, ...] = ()
    for turn, mentions in zip(texts, per_turn, strict=True):
        own = tuple(sorted(dict.fromkeys(m.form for m in mentions), key=order.__getitem__))
        people = tuple(dict.fromkeys(m.form for m in mentions if m.kind in _PEOPLE))
        if inherit and not own and last_people and {t.key for s in tokenize(turn) for t in s} & PRONOUNS:
            own = last_people
        if people:
            last_people = people
        result.append(own)
    return result


def lookup_words(texts: Sequence[str], *, exclude: Sequence[str] = ()) -> list[str]:
    """The session's words that earlier sessions could make anchors: things said in only one of its turns, then
    capitalised words at a sentence start that nothing here confirms as names ("Pepper threw up again"). The
    writer looks them up among the user's earlier turns and passes the turns it finds as ``earlier``."""
    session = _Session(texts, exclude, ())
    repeats = session.repeats()
    anchored = {a.lower() for a in session_anchors(texts, exclude=exclude)}
    things: dict[str, None] = {}
    starts: dict[str, None] = {}
    for turn in session.turns:
        for sentence in turn:
            for index, token in enumerate(sentence):
                if token.bare in anchored:
                    continue
                if session.repeatable(sentence, index) and stem(token.bare) not in repeats:
                    things[token.bare] = None
                elif token.initial and token.capitalised and not _never(token.bare) and token.bare not in DEMONYMS:
                    starts[token.bare] = None
    return list({**things, **starts})
