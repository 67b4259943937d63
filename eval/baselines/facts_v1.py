"""Frozen v1 of the fact extractor (``traces/facts.py`` at 7df002f), kept as the baseline for ``feltsense eval
facts``; the engine uses ``traces.facts``.

Only what v1 does differently is written here: its relations, the guards and objects it reads differently
(``_END``, ``_HEDGED``, ``_UNDONE``, ``_thing``), its builders that changed, its rule list, ``well_formed`` and
``extract``. Every other piece is imported from ``traces.facts``, where v2 kept it to the letter (the text shapes
and lexicons, the sentence guards, the value builders and checks): a change to one of those changes v1 too, so
v1's output on the fact cases is pinned (``tests/unit/eval/test_facts_v1_frozen.py``) and must not move.

What v1 extracts, on the principles ``traces.facts`` describes: lives_in, hometown, works_at, occupation,
name, opinion, diet, allergy, birthday and routine (``RELATIONS``), every pattern anchored on a first-person
statement in the present. Past tense never matches ("I lived in Rome", "I used to love jazz"), so v1 has no
changes, endings or preferences, and a turn's facts are only what its sentences state.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import ALLERGY_KINDS, OPINION_STANCES
from traces.facts.diet import _allergic, _allergy_noun, _cannot_eat, _coeliac, _diet, _intolerant, _not_eaten
from traces.facts.guards import _AFTER, _CLAUSE_BOUNDARY, _PASSING, _QUOTED, _SENTENCE_END, _answerable_end, _normalise
from traces.facts.identity import (
    _birthday,
    _birthday_month,
    _hometown,
    _lives_in,
    _moved_to,
    _role_birthday,
    _role_employer,
    _role_home,
    _user_name,
)
from traces.facts.lexicon import (
    _ADV,
    _ALLERGENS,
    _DATE,
    _DIETS,
    _FOOD_ALLERGENS,
    _GROUPS,
    _HABIT_ADV,
    _HABITS,
    _INTOLERANCES,
    _JOBS,
    _MONTH,
    _MONTHS,
    _NOT_A_JOB,
    _NOT_EATEN,
    _NOT_JOB_WORDS,
    _OBJECT_HABITS,
    _PEOPLE,
    _PERSON_NAME,
    _PETS,
    _STUDYING,
    _TIMING,
    _allergen_list,
    _alternation,
    _name,
    _org,
    _place,
    _role,
)
from traces.facts.rules import _ALLERGY_ADV, _AT_ORG, _I, _I_HAVE, _IM, _JOB_END, _MY
from traces.facts.value_shapes import (
    _DATE_WORD,
    _JOB_WORDS,
    _LOWER_WORD,
    _MAX_VALUE_WORDS,
    _a_name,
    _a_phrase,
    _someone,
)
from traces.facts.values import (
    _MAX_THING_WORDS,
    _PEOPLE_WORDS,
    _THING,
    Build,
    _fact,
    _person,
    _proper,
    _role_of,
    _third_person,
    _words,
)

Relation = Literal[
    "lives_in", "hometown", "works_at", "occupation", "name", "opinion", "diet", "allergy", "birthday", "routine"
]

RELATIONS: dict[Relation, str] = {
    "lives_in": 'where someone lives now. Subject "user", or "user\'s <role>" for a family member ("user\'s '
                'sister"). Value the place as said, capitalised, without "the" ("Lisbon"). A move supersedes.',
    "hometown": 'where the user is from, grew up or was born. Subject "user". Value the place ("Porto").',
    "works_at": 'who someone works for now. Subject "user" or "user\'s <role>". Value the employer\'s name '
                '("Google", "NHS"); an unnamed workplace ("a café") is not a value.',
    "occupation": 'the user\'s job now. Subject "user". Value the job, lower case, without the article '
                  '("primary school teacher").',
    "name": 'a name. Subject "user" for the user\'s own, or "user\'s <role>" for a pet or a person in their '
            'life ("user\'s dog", "user\'s little brother"); value the name as said ("Luna"). Roles most people '
            'have several of (friend, colleague, cousin, "my kids") are not slots: a second friend would '
            'supersede the first.',
    "opinion": 'a like or dislike. Subject the thing, lower case ("jazz", "user\'s job"); value the stance '
               '("loves", "likes", "hates", "can\'t stand", "doesn\'t like", "is a fan of"). Multi-valued '
               'through the subject: two likes never supersede each other; "I hate jazz now" supersedes "I love '
               'jazz".',
    "diet": 'how the user eats. Subject "user". Value "vegetarian", "vegan", "pescatarian", "kosher", '
            '"no meat"...',
    "allergy": 'a food or substance the user must avoid. Subject the allergen, lower case and singular '
               '("peanut"); value "allergic", "intolerant", "can\'t eat" or "coeliac".',
    "birthday": 'a birthday. Subject "user" or "user\'s <role>". Value the calendar date as said ("3 May", '
                '"14th of February", "June"); a relative date ("today", "next week") is not a value.',
    "routine": 'a habit. Subject the activity or the thing ("running", "coffee", "calling their mum"); value '
               'when or how ("every morning", "black").',
}
"""The relations the extractor (and the write-time prompt) may use, each with its subject and value conventions."""

# System-extracted facts on these relations land active; the others land provisional, waiting for review.
# A first-person present-tense statement of who the user is (where they live and come from, their work, names,
# diet, allergies, birthday) is stated deliberately, rarely sarcastic and stable for months, and the patterns
# for it are the narrowest; when it is wrong the user corrects it in the same words, and the correction
# supersedes. An allergy is also a safety matter: a companion that forgets one is worse than one that recalls a
# stale one. Opinions and routines are the opposite: moods pass for opinions ("I hate running" after one bad
# run), jokes and exaggeration are common, and both drift, so they wait for corroboration.
AUTO_ACTIVE_RELATIONS: frozenset[str] = frozenset(
    {"lives_in", "hometown", "works_at", "occupation", "name", "diet", "allergy", "birthday"}
)

# Where an object phrase (a liked thing, how the coffee is taken) ends: punctuation or a word that starts
# another clause or an adjunct ("I love jazz so much", "I hate coriander, it tastes like soap").
_END = (r"(?=\s*(?:[.,!?;:)\]]|$)|\s+(?:and\s+(?:I|I'm|it|it's|they|he|she|we|you|then|also)|but|because|cause|"
        r"cos|since|so|though|although|while|when|whenever|if|unless|which|who|where|that's|lol|haha|lmao|tbh|"
        r"btw|honestly|especially|like|these\s+days|nowadays|lately|at\s+the\s+moment|right\s+now|now|anymore|"
        r"any\s+more|too|as\s+well|either|more\s+than|more|than|a\s+lot|so\s+much|very\s+much|to\s+bits|"
        r"with\s+a\s+passion|weirdly|actually|really|by\s+the\s+way|for|ever|all\s+the\s+time|in\s+general|"
        r"though|to\s+be\s+honest|x+|today|tonight|rn|this\s+(?:morning|afternoon|evening|week))\b)")
# Words in the clause before a match that make it hypothetical, reported, negated or uncertain.
_HEDGED = re.compile(
    r"\b(?:if|unless|whether|might|(?-i:may)|maybe|perhaps|could|would|should|wish|wished|hope|hoping|hopefully|"
    r"want|wants|wanted|wanna|plan|plans|planning|planned|thinking|think|thinks|thought|considering|imagine|"
    r"imagining|suppose|supposing|pretend|pretending|dream|dreaming|someday|one\s+day|going\s+to|gonna|"
    r"about\s+to|try|trying|tried|used\s+to|say|says|said|saying|told|tell|tells|believe|believes|assume|"
    r"assumes|guess|doubt|when|whenever|before|until|till|once|never|not|no|nor|probably|apparently|supposedly|"
    r"sure|what|how|why|who|where|lying|kidding|joking|as\s+if)\b|n't\b|'d\b",
    re.I,
)
# Words later in the sentence that take the statement back ("I'm a nurse, well, I was until last year").
_UNDONE = re.compile(
    r"\b(?:any\s?more|no\s+longer|until\s+(?:last|recently|a\s+few|a\s+couple)|used\s+to\s+be|"
    r"well,?\s+(?:I\s+)?(?:was|used\s+to))\b",
    re.I,
)

# -- objects of likes, dislikes and habits ----------------------------------------------------------------------

# First words that make a like's object a clause or a pronoun, not a thing ("I like to think", "I hate when").
_NOT_THINGS_FIRST = frozenset({
    "to", "it", "it's", "its", "that", "this", "these", "those", "how", "what", "when", "where", "why", "who",
    "whether", "if", "someone", "somebody", "anyone", "anybody", "everyone", "everybody", "everything",
    "anything", "nothing", "something", "there", "here", "a", "an", "having", "seeing", "hearing", "talking",
    "chatting", "out", "up", "off", "in",
})
_PRONOUNS = frozenset({
    "you", "your", "yours", "u", "ur", "him", "he", "his", "she", "her", "hers", "they", "them", "it", "this",
    "that", "these", "those", "me", "myself", "yourself", "himself", "herself", "themselves", "our", "us", "ya",
    "yah", "y'all", "ye", "thee",
})
# The same for a habit's object, which may start with a preposition ("cycle to work", "go out").
_NOT_HABITS_FIRST = frozenset({
    "it", "it's", "its", "that", "this", "these", "those", "there", "here", "something", "anything", "nothing",
    "everything", "someone", "anyone", "everyone", "so", "too", "much", "more", "less", "a", "an",
})
# Words that make an object phrase about the conversation, a person, a passing moment or a clause, not a thing.
_NOT_THINGS_ANYWHERE = frozenset({
    *_PRONOUNS, "idea", "way", "fact", "thought", "feeling", "things", "stuff", "life", "self", "body", "guy",
    "girl", "lot", "not", "no", "today", "tonight", "tomorrow", "yesterday", "never", "but", "because", "i", "i'm",
    "we", "if", "when", "too", "much", "more", "less", "again",
})


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: Build
    negative: bool = False  # the statement is itself negative ("I don't like"): "anymore" does not undo it
    # A general reading ("I like X", "I do X every day") yields to the specific rules before it: "I like my coffee
    # black" is how the coffee is taken, not a liking for "my coffee black".
    general: bool = False


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
    elif words[0] in _NOT_THINGS_FIRST or any(w in _PEOPLE_WORDS for w in words):
        return None
    elif words[0] in ("my", "our") and any(w in _PETS for w in words):
        return None  # "I love my dog": affection, not taste
    said = re.sub(r"\bmy\b", "their", phrase, flags=re.I)
    subject = said.lower()
    if words[0] == "my":
        subject = "user's" + subject[len("their"):]
    return subject, said


def _role_name(match: re.Match[str], text: str) -> list[ExtractedFact]:
    name = _person(match)
    if name is None:
        return []
    role = _role_of(match)
    return [_fact(f"user's {role}", "name", name)]


def _employment(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """Occupation and employer, from "I'm a nurse at St Mary's", "I work for the NHS as a paramedic", ..."""
    groups = match.groupdict()
    facts: list[ExtractedFact] = []
    said_job = groups.get("job")
    if said_job:
        words = _words(said_job)
        modifiers = _words(groups["mods"]) if groups.get("mods") is not None else words[:-1]
        if not words or len(words) > 5 or any(w in _NOT_JOB_WORDS for w in modifiers):
            return []
        # A job said freely ("I work as a ...") is not checked against the lexicon, only against nonsense.
        if groups.get("free") is not None and (words[-1] in _NOT_JOB_WORDS or words[-1] in _NOT_THINGS_ANYWHERE):
            return []
        job = " ".join(words)
        if _NOT_A_JOB.match(match.string, match.end("job")):
            return []
        facts.append(_fact("user", "occupation", job))
    org = _proper(groups.get("org") or groups.get("org2"))
    if org and not (said_job and _words(said_job)[-1] in _STUDYING):
        facts.append(_fact("user", "works_at", org))
    return facts


def _drink(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I take my coffee black"; "I take it black" only when the turn names exactly one of coffee and tea."""
    drink = match.group("drink")
    if drink is None:
        named = {d for d in ("coffee", "tea") if re.search(rf"\b{d}\b", text, re.I)}
        if len(named) != 1:
            return []
        (drink,) = named
    drink, style = drink.lower(), " ".join(match.group("style").split())
    if any(w in _PRONOUNS for w in _words(style)):
        return []
    return [_fact(drink, "routine", style.lower())]


def _habit(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I go running every morning" -> running; "I call my mum every Sunday" -> calling their mum."""
    verb = " ".join(match.group("verb").lower().split())
    timing = " ".join(match.group("when").split())
    gerund, _ = _HABITS[verb]
    complement = " ".join((match.group("what") or "").split())
    subject = said = ""
    if complement:
        thing = _thing(complement, habit=True)
        if thing is None:
            return []
        subject, said = thing
    elif verb in _OBJECT_HABITS or verb == "go":
        return []
    if verb == "go":
        first = said.split()[0].lower()
        if first == "to":  # "go to the gym": the place
            subject = re.sub(r"^to\s+(?:the\s+)?", "", said.lower())
        elif first.endswith("ing"):  # "go running": the activity
            subject = said.lower()
        else:
            subject = f"going {said.lower()}"
    elif verb not in _OBJECT_HABITS:  # "call my mum": calling their mum
        subject = f"{gerund} {said.lower()}"
    return [_fact(subject, "routine", timing)]


def _opinion(form: Literal["verb", "doesn't", "fan", "is"] = "verb") -> Build:
    """Likes and dislikes. The value is the stance without degree, one of ``prompts.wording.OPINION_STANCES``:
    "loves", "doesn't like", "is a fan of", "is not a fan of", "is into"."""

    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        thing = _thing(match.group("thing"))
        if thing is None or _PASSING.match(match.string, match.end()):
            return []
        subject, _ = thing
        groups = match.groupdict()
        verb = " ".join((groups.get("verb") or "").lower().split())
        if form == "verb":
            value = _third_person(verb)
        elif form == "doesn't":
            value = f"doesn't {verb}"
        elif form == "fan":
            value = f"is {'not ' if groups.get('not') else ''}a fan of"
        else:
            if verb == "into" and subject.startswith("user's"):
                return []  # "I'm into my third week": a count, not a taste
            value = f"is {verb}"
        return [_fact(subject, "opinion", value)]

    return build
# How many capitalised words a name may have, as the patterns above read them (_PLACE_NAME, _ORG_NAME,
# _PERSON_NAME): a longer one is a clause.
_NAME_WORDS: dict[str, int] = {"lives_in": 4, "hometown": 4, "works_at": 5, "name": 3}


def well_formed(fact: ExtractedFact) -> bool:
    """Whether a fact has its relation's shape: an employer, a home or a name is a few capitalised words, a job a
    few lower-case ones, a date a date, a stance or a kind of allergy one of the known ones, and nothing holds
    an instruction or a clause. The extractor keeps only such facts, and a model's (``engine.facts``) that is not
    waits for review: either way the value is the user's text, and it is about to be recalled as a fact."""
    subject, relation, value = fact.subject, fact.relation, fact.value
    if relation in _NAME_WORDS:
        return _someone(subject) and _a_name(value, _NAME_WORDS[relation])
    if relation == "occupation":
        words = value.split()
        return (_someone(subject) and 0 < len(words) <= 5 and all(_LOWER_WORD.fullmatch(w) for w in words)
                and _a_phrase(value, 5, allowed=_JOB_WORDS))
    if relation == "birthday":
        words = value.split()
        return (_someone(subject) and 0 < len(words) <= 5 and any(w.lower().rstrip(".") in _MONTHS for w in words)
                and all(w.lower().rstrip(".") in _MONTHS or _DATE_WORD.fullmatch(w) for w in words))
    if relation == "diet":
        return _someone(subject) and _a_phrase(value, 5) and all(_LOWER_WORD.fullmatch(w) for w in value.split())
    if relation == "allergy":
        return value.lower() in ALLERGY_KINDS and _a_phrase(subject, 3)
    if relation == "opinion":
        return value.lower() in OPINION_STANCES and _a_phrase(subject, _MAX_THING_WORDS)
    if relation == "routine":
        return _a_phrase(subject, _MAX_THING_WORDS) and _a_phrase(value, _MAX_VALUE_WORDS)
    return _a_phrase(subject, _MAX_THING_WORDS) and _a_phrase(value, _MAX_VALUE_WORDS)
_LIKE_VERBS = (r"love|like|enjoy|adore|hate|dislike|detest|loathe|despise|can't\s+stand|cannot\s+stand|"
               r"can't\s+bear|cannot\s+bear")


def _rule(pattern: str, build: Build, *, negative: bool = False, general: bool = False) -> _Rule:
    return _Rule(re.compile(pattern, re.I), build, negative, general)


_RULES: tuple[_Rule, ...] = (
    # The user's own name.
    _rule(rf"\bmy\s+name(?:'s|\s+is)\s+{_name()}", _user_name),
    _rule(rf"(?:^|\b(?:you\s+can|just|please)\s+)call\s+me\s+{_name()}", _user_name),
    _rule(rf"{_IM}\s+called\s+{_name()}", _user_name),
    _rule(rf"{_I}\s+go\s+by\s+{_name()}", _user_name),
    _rule(rf"^\W*(?:hi|hey|hello|hiya|heya)\W+(?:I'm|I\s+am|this\s+is|it's)\s+{_name()}", _user_name),
    # The names of the people and animals in the user's life.
    _rule(rf"{_MY}{_role()}(?:'s\s+name(?:'s|\s+is|\s+was)|(?:\s+is|\s+was|'s)\s+(?:called|named)|\s+called|"
          rf"\s+named|\s*,)?\s+{_name()}", _role_name),
    _rule(rf"{_I_HAVE}\s+(?:a|an)\s+{_role()}\s*,?\s+(?:called|named)\s+{_name()}", _role_name),
    _rule(rf"(?:^|(?<=[,;]\s))\W*{_name()}(?:'s|\s+is)\s+my\s+{_role()}"
          r"(?=\s*(?:[,.!?;]|$)|\s+(?:by\s+the\s+way|btw|and|but|lol|who|too)\b)", _role_name),
    # Other people's homes, employers and birthdays: facts about them, never the user's.
    _rule(rf"{_MY}{_role((*_PETS, *_PEOPLE, *_GROUPS))}(?:\s*,?\s+{_PERSON_NAME}\s*,?)?\s+{_ADV}"
          rf"(?:(?P<verb>lives|live|is\s+living|'s\s+living|are\s+living)\s+in|"
          rf"(?:moved|has\s+moved|'s\s+moved|have\s+moved|'ve\s+moved)\s+to)\s+{_place()}", _role_home),
    _rule(rf"{_MY}{_role()}(?:\s*,?\s+{_PERSON_NAME}\s*,?)?\s+{_ADV}(?:works|is\s+working|'s\s+working)\s+"
          rf"(?:at|for)\s+{_org()}", _role_employer),
    _rule(rf"{_MY}{_role()}'s\s+(?:birthday|bday)(?:'s|\s+is)\s+(?:on\s+)?(?:the\s+)?{_DATE}", _role_birthday),
    # Where the user lives and comes from.
    _rule(rf"\b(?:I|we)\s+{_ADV}(?:live|am\s+living|are\s+living)\s+in\s+{_place()}", _lives_in),
    _rule(rf"\b(?:I|we)(?:'m|'re|\s+am|\s+are)\s+{_ADV}(?:living|based)\s+in\s+{_place()}", _lives_in),
    _rule(rf"\b(?:I|we)(?:'ve|\s+have)\s+{_ADV}been\s+living\s+in\s+{_place()}", _lives_in),
    _rule(rf"\b(?:I|we)(?:'ve|\s+have)\s+{_ADV}lived\s+in\s+{_place()}(?=\s+(?:for|since)\b)", _lives_in),
    _rule(rf"\b(?:I|we)(?:'ve|\s+have)?\s+{_ADV}(?:moved|relocated)\s+(?:back\s+)?to\s+{_place()}", _moved_to),
    _rule(rf"^\W*(?:(?:just|finally|recently)\s+)?(?:moved|relocated)\s+to\s+{_place()}", _moved_to),
    _rule(rf"{_IM}\s+(?:originally\s+)?from\s+{_place()}", _hometown),
    _rule(rf"{_I}\s+(?:originally\s+)?come\s+from\s+{_place()}", _hometown),
    _rule(rf"{_I}\s+grew\s+up\s+in\s+{_place()}", _hometown),
    _rule(rf"{_I}\s+was\s+(?:born|raised|born\s+and\s+raised|brought\s+up)\s+in\s+{_place()}", _hometown),
    # Work.
    _rule(rf"{_IM}\s+(?:(?:now|currently|actually|just|also|still|basically|officially|finally|technically)\s+)?"
          rf"(?:a|an)\s+(?P<job>(?P<mods>(?:[a-z][\w-]*\s+){{0,3}}?)(?:{_alternation(_JOBS)}))s?{_JOB_END}{_AT_ORG}",
          _employment),
    _rule(rf"{_I}(?:'m|\s+am)?\s+{_ADV}(?:work|working)\s+as\s+(?:a|an)\s+(?P<free>)"
          rf"(?P<job>(?:[a-z][\w-]*\s+){{0,3}}?[a-z][\w-]*){_JOB_END}{_AT_ORG}", _employment),
    _rule(rf"(?:{_I}\s+{_ADV}work|{_IM}\s+{_ADV}working|{_I}(?:'ve|\s+have)\s+{_ADV}been\s+working)\s+"
          rf"(?:at|for)\s+{_org()}(?:\s+as\s+(?:a|an)\s+(?P<free>)(?P<job>(?:[a-z][\w-]*\s+){{0,3}}?[a-z][\w-]*)"
          rf"{_JOB_END})?", _employment),
    _rule(rf"{_I}(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?started\s+(?:working\s+|a\s+(?:new\s+)?job\s+)?"
          rf"(?:at|with|for)\s+{_org()}", _employment),
    _rule(rf"{_I}(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:got|landed|accepted)\s+(?:a|an|the)\s+(?:new\s+)?"
          rf"(?:job|position|role|internship|placement|apprenticeship)\s+(?:at|with)\s+{_org()}", _employment),
    # Diet and allergies.
    _rule(rf"{_IM}\s+{_ADV}(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})(?![\w-])", _diet),
    _rule(rf"{_I}(?:'ve|\s+have)\s+been\s+(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})\s+(?:for|since)\b",
          _diet),
    _rule(rf"{_I}\s+{_ADV}went\s+(?P<diet>{_alternation(tuple(_DIETS))})(?![\w-])(?!\s+for\b)", _diet),
    _rule(rf"{_I}\s+{_ADV}(?:keep|eat|only\s+eat)\s+(?P<diet>kosher|halal)\b", _diet),
    _rule(rf"{_I}\s+{_ADV}(?:don't|do\s+not|never)\s+eat\s+(?P<food>{_alternation(tuple(_NOT_EATEN))})"
          r"(?=\s*(?:[.,!?;]|$)|\s+(?:anymore|at\s+all|and|but|so|because|either|now|lol|btw)\b)", _not_eaten,
          negative=True),
    _rule(rf"{_IM}\s+{_ALLERGY_ADV}allergic\s+to\s+{_allergen_list(tuple(_ALLERGENS))}", _allergic),
    _rule(rf"{_IM}\s+{_ALLERGY_ADV}(?P<food>{_alternation(_INTOLERANCES)})[\s-]+intolerant\b", _intolerant),
    _rule(rf"{_I}(?:'ve\s+got|\s+have\s+got|\s+have|\s+got)\s+(?:a|an)\s+(?:(?:severe|mild|bad|serious|really\s+bad|"
          rf"deadly|life-threatening|slight)\s+)?{_allergen_list(tuple(_ALLERGENS))}\s+(?P<kind>allergy|intolerance)\b",
          _allergy_noun),
    _rule(rf"{_IM}\s+{_ADV}(?:a\s+)?(?:coeliac|celiac)\b|{_I}\s+have\s+(?:coeliac|celiac)(?:\s+disease)?\b",
          _coeliac),
    _rule(rf"{_I}\s+{_ADV}(?:can't|cannot|can\s+not)\s+(?:eat|have|digest|tolerate|handle)\s+"
          rf"{_allergen_list(_FOOD_ALLERGENS)}(?=\s*(?:[.,!?;]|$)|\s+(?:at\s+all|and|but|so|because|either|lol|"
          r"btw|anymore|or)\b)", _cannot_eat, negative=True),
    # Birthdays.
    _rule(rf"\bmy\s+(?:birthday|bday|b-day)(?:'s|\s+is)\s+(?:on\s+)?(?:the\s+)?{_DATE}", _birthday),
    _rule(rf"{_I}\s+was\s+born\s+on\s+(?:the\s+)?{_DATE}", _birthday),
    _rule(rf"\bmy\s+(?:birthday|bday|b-day)(?:'s|\s+is)\s+in\s+(?P<month>{_MONTH})(?!\s+\d)", _birthday_month),
    # Routines.
    _rule(rf"{_I}\s+{_HABIT_ADV}(?P<verb>take|have|drink|like|prefer)\s+(?:my\s+(?P<drink>coffee|tea)|it)\s+"
          rf"(?P<style>(?:black|white|strong|weak|milky|sweet|decaf|iced|plain|no\s+sugar|"
          rf"with(?:out)?\s+[\w\s-]+?)){_END}", _drink),
    _rule(rf"{_I}\s+{_HABIT_ADV}(?P<verb>{_alternation(tuple(_HABITS))})(?:\s+(?P<what>(?:[\w'-]+\s+){{0,4}}?"
          rf"[\w'-]+))??\s+{_TIMING}", _habit, general=True),
    # Likes and dislikes, last: the rules above claim "I like my coffee black" first.
    _rule(rf"{_I}\s+{_ADV}(?P<verb>{_LIKE_VERBS})\s+{_THING}{_END}", _opinion(), general=True),
    _rule(rf"{_I}\s+{_ADV}(?:don't|do\s+not)\s+(?:really\s+|much\s+|particularly\s+)?(?P<verb>like|enjoy)\s+"
          rf"{_THING}{_END}", _opinion("doesn't"), negative=True, general=True),
    _rule(rf"{_IM}\s+{_ADV}(?P<not>not\s+)?(?:(?:a|an)\s+)?(?P<size>(?:big|huge|massive|great|giant|real|"
          rf"total|such\s+a|much\s+of\s+a|the\s+biggest)\s+)?fan\s+of\s+{_THING}{_END}", _opinion("fan"),
          negative=True, general=True),
    _rule(rf"{_IM}\s+{_ADV}(?:(?:so|really|totally|completely|kinda|kind\s+of|a\s+bit|pretty|very|super)\s+)*"
          rf"(?P<verb>obsessed\s+with|into|crazy\s+about|mad\s+about|passionate\s+about)\s+{_THING}{_END}",
          _opinion("is"), general=True),
)


def _hedged(sentence: str, start: int, boundaries: list[int]) -> bool:
    """Whether the clause before ``start`` (from the last boundary, see ``_CLAUSE_BOUNDARY``) is hedged."""
    clause_start = boundaries[bisect.bisect_right(boundaries, start) - 1]
    return _HEDGED.search(sentence, clause_start, start) is not None


def _sentence_facts(sentence: str, text: str) -> Iterator[ExtractedFact]:
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
            facts = [fact for fact in rule.build(match, text) if well_formed(fact)]
            if facts:
                read.append((match.start(), match.end()))
                yield from facts


def extract(text: str) -> tuple[ExtractedFact, ...]:
    """The atomic facts the user states in one turn, in order, without duplicates."""
    text = _normalise(text)
    found: dict[tuple[str, str, str], ExtractedFact] = {}
    for sentence in _SENTENCE_END.split(text):
        for fact in _sentence_facts(sentence.strip(), text):
            found.setdefault((fact.subject, fact.relation, fact.value.casefold()), fact)
    return tuple(found.values())


def extract_facts(text: str) -> tuple[str, ...]:
    """The sentences of ``extract``: what the trace keeps and the lexical index learns."""
    return tuple(dict.fromkeys(fact.sentence for fact in extract(text)))
