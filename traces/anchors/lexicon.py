"""The word lists of the anchor pass: relations and pets, holidays, calendar words, nationalities, interjections,
greetings, and the small function-word sets the pass reads a sentence by."""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.domain.text import stem
from engine.domain.vocabulary import INSTRUCTION_WORDS

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
