"""One session's user turns, read together: the names, relations, places and holidays of each sentence, the names
it addresses and excludes, and the things it repeats."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.domain.text import STOPWORDS, stem
from traces.anchors.lexicon import (
    _ABSTRACT,
    _AFTER_ADDRESS,
    _ARTICLES,
    _CONNECTORS,
    _DEMONYM,
    _DETERMINERS,
    _GREETINGS,
    _HAVE,
    _HOLIDAY_STARTS,
    _INDEFINITE,
    _LOCATIVES,
    _MODIFIERS_IN_STOPWORDS,
    _NAMING,
    _NOT_A_POSSESSOR,
    _NOT_POSSESSED_AFTER,
    _NOUN_LEADS,
    _OWNERS,
    _POINTERS,
    _POSSESSIVES,
    BARE_KIN,
    DEFINITE_RELATIONS,
    DEMONYMS,
    HOLIDAYS,
    NAME_FOLLOWERS,
    PETS,
    RELATIONS,
    ROUTINE_PLACES,
    TITLES,
)
from traces.anchors.tokens import Token, _never, interjection, tokenize
from traces.anchors.word_counts import (
    _MIN_REPEAT_LENGTH,
    NAME_PART_RATIO,
    NAME_RATIO,
    NAME_START_RATIO,
    REPEAT_MAX_COUNT,
    vocabulary,
)

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
