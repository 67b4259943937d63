"""The rules: each a first-person pattern and the builder of its facts, most specific first."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from engine.domain.models import ExtractedFact
from traces.facts.diet import (
    _additive,
    _allergic,
    _allergy_noun,
    _cannot_eat,
    _coeliac,
    _diet,
    _doesnt_drink,
    _how_taken,
    _intolerant,
    _kind_of_person,
    _meal,
    _not_diet,
    _not_eaten,
    _usual_order,
)
from traces.facts.identity import (
    _OWN_BUSINESS,
    _birthday,
    _birthday_month,
    _dropped_out,
    _employment,
    _former_job,
    _graduated,
    _hometown,
    _joined,
    _left_job,
    _lives_in,
    _lives_with,
    _moved_to,
    _no_longer_lives_in,
    _no_longer_lives_with,
    _no_longer_works,
    _org_of,
    _own_business,
    _relationship,
    _retired,
    _role_birthday,
    _role_died,
    _role_employer,
    _role_home,
    _role_name,
    _school,
    _started_at,
    _studies_at,
    _unemployed,
    _user_name,
)
from traces.facts.lexicon import (
    _ADDITIVES,
    _ADV,
    _ALLERGENS,
    _CAP,
    _CHILD_KINDS,
    _COUNTS,
    _DATE,
    _DIETS,
    _END,
    _FAVOURITE,
    _FOOD_ALLERGENS,
    _GROUPS,
    _HABIT_ADV,
    _HABITS,
    _HOW_TAKEN,
    _INTOLERANCES,
    _JOBS,
    _MONTH,
    _NOT_EATEN,
    _PEOPLE,
    _PERSON_NAME,
    _PET_KINDS,
    _PETS,
    _STYLES,
    _TIMING,
    _allergen_list,
    _alternation,
    _name,
    _org,
    _place,
    _role,
)
from traces.facts.likes import (
    _DOERS,
    _DOINGS,
    _GAMES,
    _INSTRUMENTS,
    _SPORT_GERUNDS,
    _activity,
    _favourite,
    _habit,
    _has,
    _hobby,
    _no_pets,
    _opinion,
    _started_habit,
)
from traces.facts.values import _THING, Build, _fact


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: Build
    negative: bool = False  # the statement is itself negative ("I don't like"): "anymore" does not undo it
    # A general reading ("I like X", "I do X every day") yields to the specific rules before it: "I like my coffee
    # black" is how the coffee is taken, not a liking for "my coffee black".
    general: bool = False
    # A change said in the past tense ("I started at", "we broke up", "I graduated"): true of now only when it is
    # news, so it is dropped when the sentence dates it long ago ("I left Boots years ago", "in 2015").
    change: bool = False


# -- the rules, most specific first -----------------------------------------------------------------------------

_I = r"\bI"
_IM = r"\bI(?:'m|\s+am)"
_I_HAVE = r"\b(?:I|we)(?:'ve\s+got|\s+have\s+got|\s+have|\s+got|'ve)"
_MY = r"\b(?:my|our)\s+"
_JOB_END = (r"(?=\s*(?:[.,!?;:)\-]|$)|\s+(?:at|for|with|in|on|and|but|so|who|which|now|by|from|too|myself|lol|"
            r"haha|btw|tbh|though|because|since|these|this|during|here|there|currently|full[\s-]time|"
            r"part[\s-]time|nights|days|x+)\b)")
_AT_ORG = rf"(?:\s+(?:at|for|with)\s+{_org()})?"
_ANY_ADV = r"(?:(?-i:[a-z]{3,}(?:ly|ley))\s+)?"  # "I absolutley love DIYs": any adverb, as typed
_BE = r"(?:\bI(?:'m|\s+am)|\bI(?:'ve|\s+have)\s+(?:always\s+|long\s+|really\s+|genuinely\s+)?been)"
_ALLERGY_ADV = (r"(?:(?:very|severely|really|deathly|super|mildly|slightly|quite|badly|highly|seriously|so|"
                r"extremely|actually|also|just)\s+)*")
_LIKE_VERBS = (r"love|like|enjoy|adore|prefer|hate|dislike|detest|loathe|despise|can't\s+stand|cannot\s+stand|"
               r"can't\s+bear|cannot\s+bear")


_JUST = r"(?:(?:just|finally|recently|officially|actually|now|also|already|today|yesterday|literally)\s+)*"
_HAVE = r"(?:'ve|\s+have)?"
_JOB = rf"(?P<job>(?:[a-z][\w-]*\s+){{0,3}}?[a-z][\w-]*){_JOB_END}"
# "I left Brightline and joined Orbit Foods": the second verb is the user's too.
_I_AND = r"\bI\s(?:[^.!?;,]{0,60}?\s)?and\s+(?:then\s+|now\s+)?"
_AS_JOB = rf"(?:\s+as\s+(?:a|an)\s+(?P<job>(?:[a-z][\w-]*\s+){{0,2}}?(?:{_alternation(_JOBS)}))(?![\w-]))?"
_PARTNERS = ("boyfriend", "girlfriend", "partner", "husband", "wife", "fiancé", "fiancée", "fiance", "fiancee")
_HOUSEMATES = (*_PEOPLE, *_GROUPS, "friends", "flatmates", "roommates", "housemates", "kids", "children", "family",
               "mates", "cousin", "aunt", "uncle", "grandparents", "sisters", "brothers", "boys", "girls")
# Who the user lives with: "alone", "with my parents", "with Sam and Alex".
_WHO = (rf"(?:(?P<alone>alone|on\s+my\s+own|by\s+myself)\b|with\s+(?:my\s+{_role(_HOUSEMATES)}\b|"
        rf"(?P<who>{_PERSON_NAME}(?:\s+(?:and|&)\s+{_PERSON_NAME})?)(?![\w'-])))")
# A breakup or a status said of the user's couple: "we", "I", "Sam and I", "my boyfriend and I".
_COUPLE = (rf"(?:\bwe|\bI|\b(?:(?:my\s+(?:{_alternation(_PARTNERS)}))|(?-i:[A-Z][a-z]+))\s+and\s+I)")
_ANYMORE = re.compile(r"[^.!?]{0,40}?\b(?:any\s?more|no\s+longer|now|these\s+days)\b", re.I)
# Where an ordered or favourite thing ends, beyond ``_END``: "a flat white at the station", "Alien, because...".
_ITEM_END = (rf"(?=\s+(?:at|from|in|on|when|whenever|if|every|each|because|'cause|cause|since|as|which|who|with)\b"
             rf"|\s+-|{_END})")
_TITLE_END = rf"(?=\s+(?:as|because|'cause|cause|since|which|who|when)\b|\s+-|{_END})"


def _no_longer(match: re.Match[str]) -> bool:
    """An ending said as one: "no longer" in it, or "any more" ("now") after it."""
    return "no longer" in match.group(0).lower() or _ANYMORE.match(match.string, match.end()) is not None


def _ending(build: Build) -> Build:
    """``build`` only when the statement says the thing ended ("I'm not vegetarian any more", not "I'm not
    vegetarian but...")."""

    def checked(match: re.Match[str], text: str) -> list[ExtractedFact]:
        return build(match, text) if _no_longer(match) else []

    return checked


def _status(status: str) -> Build:
    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        return [_fact("user", "relationship", status)]

    return build


def _school_only(match: re.Match[str], text: str) -> list[ExtractedFact]:
    org = _org_of(match)
    return [_fact("user", "studies_at", org)] if org and _school(org) else []


def _rule(pattern: str, build: Build, *, negative: bool = False, general: bool = False,
          change: bool = False) -> _Rule:
    return _Rule(re.compile(pattern, re.I), build, negative, general, change)


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
    # A death in the user's life: the role (and its name), never a figure of speech about a thing ("my phone died"
    # has no role).
    _rule(rf"{_MY}{_role()}(?:\s*,?\s+{_name()}\s*,?)?\s+(?:has\s+|had\s+|just\s+|sadly\s+|finally\s+)?"
          rf"(?:died|passed\s+away|passed\s+on|passed|was\s+put\s+(?:down|to\s+sleep)|was\s+killed)\b", _role_died),
    _rule(rf"\b(?:we|I)\s+(?:had\s+to\s+|have\s+had\s+to\s+)?(?:put|have\s+put)\s+(?:our|my)\s+"
          rf"(?:(?:old|poor|sweet|lovely|beautiful|little|beloved|family)\s+)?{_role()}"
          rf"(?:\s*,?\s+{_name()}\s*,?)?\s+(?:down|to\s+sleep)\b", _role_died),
    _rule(rf"\bI\s+(?:just\s+)?lost\s+my\s+{_role()}(?:\s*,?\s+{_name()}\s*,?)?"
          rf"(?=\s*(?:[,.!?;]|$)|\s+(?:to|last|this|on|in|yesterday|today)\b)", _role_died),
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
    # Changes of work and school. A school (by its name's last word) is where the user studies.
    _rule(rf"(?:{_I}{_HAVE}\s+|{_I_AND}){_JUST}started\s+(?:(?:working\s+|work\s+|a\s+(?:new\s+)?(?:job|role|position)\s+|"
          rf"my\s+new\s+(?:job|role)\s+)(?:at|with|for)|(?P<study>uni|university|college|school|my\s+(?:degree|course|"
          rf"masters|master's|phd))\s+at|at|for)\s+{_org()}", _started_at, change=True),
    _rule(rf"{_IM}\s+{_JUST}starting\s+(?:(?:a\s+new\s+job|(?:my\s+)?new\s+job|work)\s+(?:at|with)|(?P<study>uni|"
          rf"university|college|school|my\s+(?:degree|course|masters|phd))\s+at|at)\s+{_org()}", _started_at),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:got|landed|accepted|took|taken|started)\s+(?:a|an|the)\s+(?:new\s+)?"
          rf"(?:[a-z]+\s+)?(?:job|position|role|internship|placement|apprenticeship|post)\s+(?:at|with)\s+{_org()}",
          _started_at, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:accepted|took|taken)\s+(?:a|an|the)\s+(?:job\s+)?offer\s+(?:from|at|with)\s+"
          rf"{_org()}", _started_at, change=True),
    _rule(rf"{_I}\s+(?:was|got|'ve\s+been|have\s+been)\s+{_JUST}(?:hired|taken\s+on|recruited)\s+(?:by|at)\s+"
          rf"{_org()}", _started_at, change=True),
    _rule(rf"\bmy\s+new\s+(?:job|role|position)\s+(?:at|with)\s+{_org()}", _started_at),
    _rule(rf"(?:{_I}{_HAVE}\s+|{_I_AND}){_JUST}joined\s+{_org()}(?:\s+as\s+(?:a|an)\s+(?P<free>){_JOB})?", _joined,
          change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?P<verb>left|quit|resigned\s+from|walked\s+out\s+of|handed\s+in\s+my\s+notice\s+"
          rf"at)\s+(?P<myjob>my\s+(?:[a-z]+\s+)?(?:job|role|position|post))(?:\s+(?:at|with|for)\s+{_org()})?"
          rf"{_AS_JOB}", _left_job, negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?P<verb>left|quit|resigned\s+from|walked\s+out\s+of|handed\s+in\s+my\s+notice\s+"
          rf"at)\s+{_org()}", _left_job, negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:been|got|was|were)\s+{_JUST}(?P<off>laid\s+off|made\s+redundant|fired|sacked|"
          rf"let\s+go)(?:\s+(?:from|at|by)\s+{_org()})?", _left_job, negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}lost\s+(?P<myjob>my\s+job)(?:\s+(?:at|with)\s+{_org()})?{_AS_JOB}", _left_job,
          negative=True, change=True),
    _rule(rf"{_I}\s+(?:don't|do\s+not|no\s+longer|don't\s+even)\s+work\s+(?:at|for|with)\s+(?:{_org()}|"
          rf"(?:the|a|an|that)\s+[a-z][\w-]*(?:\s+(?!any|now\b)[a-z][\w-]*)?)", _ending(_no_longer_works),
          negative=True),
    _rule(rf"{_IM}\s+{_JUST}(?:unemployed|out\s+of\s+work|between\s+jobs|jobless)\b", _unemployed, negative=True),
    _rule(rf"{_I}(?:'m|\s+am|'ve|\s+have)?\s+{_JUST}(?:(?:happily|fully|semi-)\s*)?retired\b(?!\s+(?:my|the|it|that|"
          rf"this|a|an|them|from\s+(?-i:[a-z])))(?:\s+from\s+{_org()})?", _retired, negative=True),
    _rule(rf"{_IM}\s+(?:no\s+longer|not)\s+(?:a|an)\s+(?P<job>(?:[a-z][\w-]*\s+){{0,2}}?(?:{_alternation(_JOBS)}))"
          r"(?![\w-])", _ending(_former_job), negative=True),
    _rule(rf"{_I}(?:'m|\s+am)?\s+{_ADV}(?:study|studying)\s+(?:[a-z][\w-]*\s+){{0,3}}?at\s+{_org()}", _studies_at),
    _rule(rf"{_I}\s+{_ADV}go\s+to\s+{_org()}", _school_only),
    _rule(rf"{_IM}\s+(?:now\s+|currently\s+|still\s+)?(?:in\s+my\s+(?:first|second|third|fourth|final|last)\s+year\s+"
          rf"(?:at|of)|at|doing\s+(?:a|an|my)\s+(?:[\w-]+\s+){{0,3}}?(?:degree|masters|master's|phd|course|diploma|"
          rf"ba|bsc|ma|msc|pgce)\s+at)\s+{_org()}", _school_only),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}graduated(?:\s+from\s+(?:(?:uni|university|college|school|high\s+school)\b|"
          rf"{_org()}))?", _graduated, negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}finished\s+(?:uni|university|college|my\s+(?:degree|masters|master's|phd|"
          rf"studies))\b", _graduated, negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}dropped\s+out\s+of\s+{_org()}", _dropped_out, negative=True, change=True),
    # Who the user lives with, and homes left.
    _rule(rf"{_I}{_HAVE}\s+{_JUST}moved\s+in\s+{_WHO}", _lives_with, change=True),
    _rule(rf"\b(?:I|we)\s+{_ADV}(?:live|am\s+living|are\s+living)\s+{_WHO}", _lives_with),
    _rule(rf"\b(?:I|we)(?:'m|'re|\s+am|\s+are)\s+{_ADV}living\s+{_WHO}", _lives_with),
    _rule(rf"\b(?:I|we)\s+(?:don't|do\s+not|no\s+longer)\s+live\s+{_WHO}", _ending(_no_longer_lives_with),
          negative=True),
    _rule(rf"\b(?:I|we)\s+(?:don't|do\s+not|no\s+longer)\s+live\s+in\s+{_place()}", _ending(_no_longer_lives_in),
          negative=True),
    # Relationships.
    _rule(rf"{_IM}\s+{_JUST}(?:happily\s+|newly\s+|still\s+)?(?P<status>married|engaged|single|divorced|separated|"
          rf"widowed|a\s+widow(?:er)?|in\s+a\s+(?:new\s+|serious\s+|long[\s-]distance\s+|happy\s+|committed\s+)?"
          rf"relationship|seeing\s+someone|dating\s+someone|not\s+single)(?![\w-])(?!\s+(?:to\s+(?:my|the)\s+"
          rf"(?:job|work|career|phone)|in\b|with\s+(?:the|this|that|it|my\s+(?:job|work|phone))\b|out\b|for\s+"
          rf"(?:the|this|a)\b))", _relationship),
    _rule(rf"\b(?:I|we){_HAVE}\s+{_JUST}(?:got|gotten|been|became)\s+(?P<status>married|engaged|divorced|"
          rf"separated)\b", _relationship, change=True),
    _rule(rf"{_COUPLE}{_HAVE}\s+{_JUST}(?:broke|broken|split)\s+up\b(?!\s+(?:a|the|some|it|them|that|this)\b)",
          _status("broken up"), negative=True, change=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:broke|broken|split)\s+up\s+with\s+(?:my\s+(?:{_alternation(_PARTNERS)})|him|"
          rf"her|them|(?-i:[A-Z][a-z]+)\b)", _status("broken up"), negative=True, change=True),
    _rule(rf"\bmy\s+(?:{_alternation(_PARTNERS)})\s+{_JUST}(?:broke\s+up\s+with|dumped|left)\s+me\b",
          _status("broken up"), negative=True, change=True),
    _rule(rf"{_IM}\s+{_JUST}dating\s+(?-i:[A-Z][a-z]+)\b(?!\s+(?:app|apps|site|sites)\b)",
          _status("in a relationship")),
    _rule(rf"{_I}(?:'ve\s+got|\s+have\s+got|\s+have|\s+got)\s+a\s+(?:new\s+)?(?:boyfriend|girlfriend|partner)\b"
          r"(?=\s*(?:[.,!?;]|$)|\s+(?:now|called|named|and|who|lol|btw)\b)", _status("in a relationship"),
          change=True),
    # Diet and allergies.
    _rule(rf"{_IM}\s+{_ADV}(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})(?![\w-])", _diet),
    _rule(rf"{_I}(?:'ve|\s+have)\s+been\s+(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})\s+(?:for|since)\b",
          _diet),
    _rule(rf"{_I}\s+{_ADV}went\s+(?P<diet>{_alternation(tuple(_DIETS))})(?![\w-])(?!\s+for\b)", _diet),
    _rule(rf"{_I}\s+{_ADV}(?:keep|eat|only\s+eat)\s+(?P<diet>kosher|halal)\b", _diet),
    _rule(rf"{_I}\s+{_ADV}(?:don't|do\s+not|never)\s+eat\s+(?P<food>{_alternation(tuple(_NOT_EATEN))})"
          r"(?=\s*(?:[.,!?;]|$)|\s+(?:anymore|at\s+all|and|but|so|because|either|now|lol|btw)\b)", _not_eaten,
          negative=True),
    _rule(rf"{_IM}\s+(?:no\s+longer|not)\s+(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})(?![\w-])",
          _ending(_not_diet), negative=True),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:stopped|quit|gave\s+up)\s+being\s+(?:a\s+)?(?P<diet>{_alternation(tuple(_DIETS))})"
          r"(?![\w-])", _not_diet, negative=True, change=True),
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
    # Food and drink: how the user has them, what they order, what they do not drink; then favourites, pets and
    # children, routines.
    _rule(rf"{_I}\s+{_HABIT_ADV}(?:take|have|drink|like|prefer|order|get|eat|love|want)\s+(?:my\s+"
          rf"(?P<drink>{_alternation(_HOW_TAKEN)})|it)\s+(?P<style>{_STYLES}){_END}", _how_taken),
    _rule(rf"{_I}\s+{_HABIT_ADV}(?:take|have|put|add|use|want|like|need)\s+(?P<add>{_ADDITIVES})\s+in\s+my\s+"
          r"(?P<drink>coffee|tea|latte|porridge|cereal)\b", _additive),
    _rule(rf"\bmy\s+(?:usual|regular|go-to|go\s+to|standard|default|normal|typical)\s+(?:(?P<kind>coffee|starbucks|"
          rf"café|cafe|pub|bar|lunch|breakfast|takeaway|drinks?)\s+)?(?P<noun>order|drink|coffee)(?:'s|\s+is|\s+has\s+"
          rf"to\s+be|\s+will\s+always\s+be)\s+(?:always\s+|usually\s+|just\s+|still\s+)?(?P<item>[^.,!?;:()]{{1,50}}?)"
          rf"{_ITEM_END}", functools.partial(_usual_order, food=False)),
    _rule(rf"{_I}\s+{_HABIT_ADV}(?:have|eat)\s+(?P<item>[^.,!?;:()]{{1,40}}?)\s+for\s+(?P<meal>breakfast|lunch|"
          r"dinner)\b(?!\s+(?:tonight|today|tomorrow|this|later|again|now)\b)", _meal),
    _rule(rf"{_I}\s+(?:always|usually|normally|generally|typically|tend\s+to)\s+(?:order|get|go\s+for|choose|pick|"
          rf"have)\s+(?P<item>[^.,!?;:()]{{1,50}}?){_ITEM_END}",
          functools.partial(_usual_order, food=True), general=True),
    _rule(rf"{_IM}\s+{_ADV}(?:more\s+of\s+)?(?:a|an)\s+(?:(?:big|huge|massive|real|total|bit\s+of\s+a)\s+)?"
          r"(?P<food>coffee|tea|wine|beer|whisky|whiskey|gin|chocolate|cheese|pizza|sushi|curry)\s+(?P<kind>person|"
          r"lover|addict|fanatic|snob|drinker)\b", _kind_of_person),
    _rule(rf"{_I}\s+{_ADV}(?:don't|do\s+not|never)\s+drink(?:\s+(?P<what>alcohol|booze|coffee|caffeine|beer|wine|"
          r"spirits|milk|tea|fizzy\s+drinks|energy\s+drinks|soda))?(?=\s*(?:[.,!?;]|$)|\s+(?:any\s?more|at\s+all|and|"
          r"but|so|because|either|now|lol|btw|since|though)\b)", _doesnt_drink, negative=True),
    _rule(rf"{_IM}\s+{_ADV}(?:teetotal|tee-total|a\s+teetotaller)\b", _doesnt_drink, negative=True),
    _rule(rf"\bmy\s+(?:(?:all[\s-]time|absolute|very|personal|current|top|new|ultimate)\s+)?{_FAVOURITE}\s+"
          rf"(?P<kind>(?:[a-z][\w-]*\s+){{0,2}}?[a-z][\w-]*)(?:\s+(?:of\s+all\s+time|ever|right\s+now|at\s+the\s+"
          rf"moment|these\s+days|lately))?(?:'s|\s+is|\s+has\s+to\s+be|\s+will\s+always\s+be|\s+has\s+always\s+been|"
          rf"\s+remains)\s+(?:still\s+|always\s+|definitely\s+|easily\s+|hands\s+down\s+)?(?P<value>[^.,!?;:()]{{1,60}}?)"
          rf"{_TITLE_END}", functools.partial(_favourite, before=False)),
    _rule(rf"(?:^|(?<=[,;:]\s)|\b(?:and|but|so|plus)\s+)\W*(?P<value>(?:the\s+)?{_CAP}(?:\s+(?:(?:of|the|and|&|in|"
          rf"on|a)\s+)?{_CAP}){{0,5}}|[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?:is|are|'s|has\s+always\s+been|will\s+always\s+"
          rf"be)\s+(?:still\s+|definitely\s+|easily\s+)?my\s+(?:(?:all[\s-]time|absolute|very|personal|top|ultimate)"
          rf"\s+)?{_FAVOURITE}\s+(?P<kind>(?:[a-z][\w-]*\s+){{0,2}}?[a-z][\w-]*){_END}",
          functools.partial(_favourite, before=True)),
    _rule(rf"^\W*(?P<thing>[^.,!?;:()]{{1,60}}?)\s+(?:is|are|has\s+always\s+been|will\s+always\s+be)\s+(?:definitely\s+|"
          rf"totally\s+|easily\s+|still\s+)?my\s+(?:(?:all[\s-]time|absolute|very|personal|top|ultimate)\s+)?"
          rf"{_FAVOURITE}s?(?:\s+thing)?(?=\s*(?:[.,!;:)]|$))", _opinion("loves"), general=True),
    _rule(rf"\b(?:I|we)(?:'ve\s+got|\s+have\s+got|\s+have|\s+got|'ve|(?:'ve|\s+have)?\s+{_JUST}(?:adopted|rescued))\s+"
          rf"(?P<count>{_COUNTS}|this|these)\s+(?P<mods>(?:(?:little|"
          rf"young|grown|grown-up|adult|teenage|beautiful|lovely|gorgeous|wonderful|amazing|adorable|cute|rescue|"
          rf"rescued|old|new|baby|twin|fluffy|crazy|black|white|ginger|tabby|tiny)\s+){{0,2}})"
          rf"(?P<kind>{_alternation((*_PET_KINDS, *_CHILD_KINDS))})(?=\s*(?:[.,!?;:)]|$)|\s+(?:called|named|and|who|"
          r"that|at\s+home|now|too|of\s+my\s+own|together|already|lol|btw|yesterday|today|recently|last\s+\w+|this\s+"
          r"\w+|(?:a|one|two|three|a\s+few|a\s+couple\s+of)\s+(?:days|weeks|months)\s+ago|from\s+(?:a|the)\s+(?:local\s+)?"
          r"(?:shelter|rescue|breeder))\b)", _has),
    _rule(r"\b(?:I|we)\s+(?:don't|do\s+not)\s+have\s+(?:any\s+)?(?P<kind>kids|children|pets)(?:\s+(?:yet|at\s+all|"
          r"myself|of\s+my\s+own))?(?=\s*(?:[.,!?;:)]|$)|\s+(?:and|but|so|because|though|lol|btw|either)\b)", _no_pets,
          negative=True),
    # What the user is busy with these days.
    _rule(rf"{_IM}\s+(?:also\s+)?(?P<marker>still|currently|now|these\s+days)\s+(?P<gerund>[a-z]{{2,}}ing)\b"
          rf"(?:\s+(?P<what>[^.,!?;:()]{{1,50}}?))?{_END}", _activity, general=True),
    _rule(rf"\bI(?:'ve|\s+have)\s+(?:also\s+|really\s+|just\s+)?been\s+(?P<gerund>[a-z]{{2,}}ing)\b(?:\s+(?P<what>"
          rf"[^.,!?;:()]{{1,60}}?))??\s+(?P<marker>lately|recently|(?:a\s+lot|more)(?=\s*(?:[.,!?;]|$))|for\s+(?:a\s+while|(?:about\s+|almost\s+|"
          rf"over\s+)?(?:a|one|two|three|four|five|six|a\s+few|a\s+couple\s+of|several|\d+)\s+(?:weeks?|months?|"
          rf"years?))|since\s+(?:last\s+\w+|(?:19|20)\d\d|{_MONTH}))\b", _activity, general=True),
    # Routines.
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:started|begun|began|been)\s+(?P<gerund>[a-z]{{2,}}ing)\b(?:\s+(?P<what>(?:[\w'-]+\s+)"
          rf"{{0,5}}?[\w'-]+))??\s+{_TIMING}", _started_habit, general=True),
    _rule(rf"{_I}\s+{_HABIT_ADV}(?P<verb>{_alternation(tuple(_HABITS))})(?:\s+(?P<what>(?:[\w'-]+\s+){{0,4}}?"
          rf"[\w'-]+))??\s+{_TIMING}", _habit, general=True),
    # Hobbies, and working for oneself: after the routines, so "I play football every Thursday" is both.
    _rule(rf"\b(?:I|we)\s+{_HABIT_ADV}{_ADV}play\s+(?:the\s+|some\s+|a\s+lot\s+of\s+|lots\s+of\s+)?"
          rf"(?P<activity>{_alternation((*_INSTRUMENTS, *_GAMES))})(?![\w-])(?!\s+(?:match|game|tournament|"
          r"tonight|today|tomorrow|later|this|next|with\s+you)\b)", _hobby("plays")),
    _rule(rf"\bI\s+{_HABIT_ADV}{_ADV}do\s+(?:some\s+|a\s+lot\s+of\s+|lots\s+of\s+)?(?P<activity>"
          rf"{_alternation(_DOINGS)})(?![\w-])(?!\s+(?:tonight|today|tomorrow|later|this|next|class\s+(?:tonight|"
          r"today|tomorrow)))", _hobby("does")),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:started|took\s+up|taken\s+up|got\s+into|picked\s+up)\s+(?:playing\s+(?:the\s+)?|"
          rf"doing\s+)?(?P<activity>{_alternation((*_INSTRUMENTS, *_GAMES, *_DOINGS, *_SPORT_GERUNDS))})(?![\w-])"
          r"(?=\s+(?:about\s+|almost\s+|nearly\s+|over\s+)?(?:\w+|a\s+few|a\s+couple\s+of)\s+(?:years?|months?)\s+"
          r"ago|\s+(?:last|this)\s+(?:year|month|spring|summer|autumn|fall|winter)|\s+recently|\s+as\s+a\s+hobby|"
          r"\s*[.,!;]|\s*$|\s+and\s+(?:I\s+)?(?:love|enjoy|it's\s+been|it\s+has\s+been))", _hobby("started")),
    _rule(rf"{_IM}\s+{_ADV}(?:a|an)\s+(?:(?:big|huge|keen|avid|massive|real|serious|passionate|expert|amateur|"
          rf"competitive|regular|decent|good|proper|casual)\s+)?(?P<activity>{_alternation(tuple(_DOERS))})"
          r"(?=\s*(?:[.,!?;:)]|$)|\s+(?:now|too|and|but|so|myself|at\s+heart|lol|btw)\b)", _hobby("doer")),
    _rule(rf"{_I}{_HAVE}\s+{_JUST}(?:run|own|have|started|opened|launched|set\s+up|founded)\s+my\s+own\s+"
          rf"(?P<business>(?:[a-z][\w-]*\s+){{0,2}}?(?:{_alternation(_OWN_BUSINESS)}))(?![\w-])", _own_business),
    _rule(rf"\bmy\s+own\s+(?P<business>(?:[a-z][\w-]*\s+){{0,2}}?(?:{_alternation(_OWN_BUSINESS)}))(?![\w-])\s+"
          r"(?:is|has|keeps|'s)\b", _own_business),
    # Likes and dislikes, last: the rules above claim "I like my coffee black" first.
    _rule(rf"(?:{_I}|\bwe(?:\s+all|\s+both)?)\s+{_ADV}{_ANY_ADV}(?P<verb>{_LIKE_VERBS})\s+{_THING}{_END}", _opinion(),
          general=True),
    _rule(rf"\bI(?:'ve|\s+have)\s+(?:always|long|forever)\s+(?P<verb>loved|liked|enjoyed|adored|hated|disliked|"
          rf"preferred)\s+{_THING}{_END}", _opinion("since"), general=True),
    _rule(rf"{_I}\s+{_ADV}(?:don't|do\s+not)\s+(?:really\s+|much\s+|particularly\s+)?(?P<verb>like|enjoy)\s+"
          rf"{_THING}{_END}", _opinion("doesn't"), negative=True, general=True),
    _rule(rf"{_BE}\s+{_ADV}(?P<not>not\s+)?(?:(?:a|an)\s+)?(?P<size>(?:big|huge|massive|great|giant|real|"
          rf"total|such\s+a|much\s+of\s+a|the\s+biggest|lifelong|long-time|longtime|die-hard|diehard)\s+)?fan\s+of\s+"
          rf"{_THING}{_END}", _opinion("fan"), negative=True, general=True),
    _rule(rf"{_IM}\s+{_ADV}(?:a|an)\s+(?:(?:big|huge|massive|great|giant|real|total|lifelong|long-time|longtime|"
          rf"die-hard|diehard|proper|massive)\s+)?(?P<thing>(?:[\w'-]+\s+){{0,2}}?[\w'-]+)\s+fan\b(?!\s+of\b)"
          rf"(?!['\w-]){_END}", _opinion("fan"), general=True),
    _rule(rf"(?:{_BE}|\bwe(?:'re|\s+are)(?:\s+all|\s+both)?)\s+{_ADV}(?:(?:so|really|totally|completely|kinda|kind\s+of|"
          rf"a\s+bit|pretty|very|super|more|much\s+more|a\s+lot\s+more)\s+)*"
          rf"(?P<verb>obsessed\s+with|into|crazy\s+about|mad\s+about|passionate\s+about)\s+{_THING}{_END}",
          _opinion("is"), general=True),
    _rule(rf"{_IM}\s+{_ADV}(?:(?:kind\s+of|kinda|sort\s+of|such)\s+)?(?:a|an)\s+(?:(?:total|real|huge|big|massive)\s+)?"
          rf"sucker\s+for\s+{_THING}{_END}", _opinion("loves"), general=True),
    _rule(rf"(?<!lost\s)(?<!lose\s)(?<!losing\s)\bmy\s+(?:(?:great|huge|big|deep|lifelong|biggest|true|first)\s+)?"
          rf"(?P<verb>love|passion)\s+(?:for|of)\s+{_THING}{_END}", _opinion("noun"), general=True),
)
