"""The anchors of a session: per turn (``memory_anchors``), for the whole session (``session_anchors``), and the
words earlier sessions could make anchors (``lookup_words``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.domain.text import stem
from traces.anchors.lexicon import DEMONYMS, PRONOUNS
from traces.anchors.session import _PEOPLE, NAME, THING, Key, _at, _form, _key, _Mention, _Session
from traces.anchors.tokens import _never, tokenize


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
