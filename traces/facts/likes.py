"""The builders for what the user likes and does: likes and dislikes (tastes in food and drink, opinions of
anything else), favourites, hobbies, habits and routines, what they are busy with, and their pets and children."""

from __future__ import annotations

import re
from typing import Literal

from engine.domain.models import ExtractedFact
from traces.facts.diet import _food_like, _item, _singular
from traces.facts.guards import _PASSING
from traces.facts.lexicon import _CHILD_KINDS, _FAVOURITE_KINDS, _FOODS, _HABITS, _OBJECT_HABITS, _PET_KINDS
from traces.facts.value_shapes import _NAME_WORD
from traces.facts.values import (
    _NOT_THINGS_ANYWHERE,
    _PEOPLE_WORDS,
    _VAGUE_THINGS,
    Build,
    _fact,
    _thing,
    _third_person,
    _words,
)


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


# Gerunds that say how the user is, or what they mean to do, not what they are busy with.
_NOT_ACTIVITIES = frozenset({
    "thinking", "feeling", "hoping", "planning", "wondering", "trying", "wanting", "waiting", "going", "getting",
    "being", "having", "doing", "saying", "telling", "talking", "meaning", "dying", "loving", "enjoying", "missing",
    "worrying", "stressing", "freaking", "kidding", "joking", "living", "staying", "keeping", "looking", "coming",
    "leaving", "starting", "considering", "struggling", "dealing", "processing", "healing", "recovering", "holding",
    "hanging", "chilling", "relaxing", "resting", "sleeping", "waking", "sitting", "lying", "standing", "sending",
    "asking", "wishing", "praying", "crying", "laughing", "smiling", "counting", "finding", "seeing", "hearing",
    "noticing", "realizing", "realising", "learning", "figuring", "managing", "coping", "pushing", "putting",
    "making", "taking", "giving", "trucking", "rocking", "kicking", "killing", "buzzing", "glowing", "feeding",
})


def _first_part(phrase: str) -> str:
    """A phrase up to a second one joined to it ("supporting youth sports and fighting for fair chances")."""
    return re.split(r"\s+(?:and|or|&)\s+(?=[a-z]{2,}ing\b)", phrase, maxsplit=1)[0]


def _activity(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I'm still volunteering at the shelter", "I've been working on my novel lately"."""
    gerund = match.group("gerund").lower()
    what = match.group("what") or ""
    looking_into = gerund == "looking" and re.match(r"\s*into\b", what) is not None  # "looking into counselling"
    what = _first_part(what)
    if (gerund in _NOT_ACTIVITIES and not looking_into) or (
            gerund == "working" and re.match(r"\s*(?:at|for|as|with|in)\b", what)):
        return []  # "I'm still working at Tesco": an employer, read by the work rules
    said = ""
    if what:
        thing = _thing(what, habit=True)
        if thing is None:
            return []
        said = thing[1].lower()
    elif gerund in ("working", "training", "studying", "playing", "practicing", "practising"):
        return []  # "I'm still working": on what?
    if said and _words(said)[-1] in _LOOSE_ENDS | {"create", "make", "get", "do", "help"}:
        return []  # "I've been working on for a while", "collaborating with organizations to create"
    marker = " ".join(match.group("marker").lower().split())
    marker = {"currently": "these days", "now": "these days", "recently": "lately", "more": "lately"}.get(marker,
                                                                                                       marker)
    return [_fact(f"{gerund} {said}".strip(), "activity", marker)]


def _started_habit(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I just started volunteering at a shelter once a month", "I've been running every morning"."""
    gerund = match.group("gerund").lower()
    if gerund in {"thinking", "feeling", "trying", "planning", "hoping", "wanting", "getting", "being", "doing",
                  "having", "going", "looking", "working", "saying", "telling", "talking", "wondering", "meaning"}:
        return []
    said = ""
    if match.group("what"):
        thing = _thing(match.group("what"), habit=True)
        if thing is None:
            return []
        said = thing[1].lower()
    return [_fact(f"{gerund} {said}".strip(), "routine", " ".join(match.group("when").split()))]


def _opinion(form: Literal["verb", "doesn't", "fan", "is", "since", "noun", "loves"] = "verb") -> Build:
    """Likes and dislikes. The value is the stance without degree, one of ``prompts.wording.OPINION_STANCES``:
    "loves", "doesn't like", "is a fan of", "is not a fan of", "is into"."""

    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        groups = match.groupdict()
        verb = " ".join((groups.get("verb") or "").lower().split())
        said = match.group("thing")
        if verb == "prefer":  # "I prefer tea to coffee": the preferred one
            said = re.split(r"\s+(?:to|over|rather\s+than|instead\s+of)\s+", said, maxsplit=1)[0]
        parts = re.split(r"\s+(?:and|or|&)\s+(?=[a-z]{2,}ing\b)", said)  # "helping people and making a change"
        said, more = parts[0], parts[1:3]
        thing = _thing(said)
        if thing is None or _PASSING.match(match.string, match.end()) or not _a_taste(said, match):
            return []
        if form != "noun" and _CLAUSE_VERB.match(match.string, match.end()):
            return []  # "passionate about making sure veterans are supported": a clause, cut
        subject, _ = thing
        if form == "verb":
            value = _third_person(verb)
        elif form == "since":  # "I've always loved X": loves it still
            value = _third_person({"loved": "love", "liked": "like", "enjoyed": "enjoy", "adored": "adore",
                                   "hated": "hate", "disliked": "dislike", "preferred": "prefer"}[verb])
        elif form == "loves":  # "Painting landscapes is my favourite!", "I'm a sucker for superheroes"
            value = "loves"
        elif form == "noun":  # "my love for X", "my passion for X"
            value = "loves" if verb == "love" else "is passionate about"
        elif form == "doesn't":
            value = f"doesn't {verb}"
        elif form == "fan":
            if _words(said)[0] in _FAN_SIZES:
                return []  # "I'm a huge fan": of what was said before
            value = f"is {'not ' if groups.get('not') else ''}a fan of"
        else:
            if verb == "into" and subject.startswith("user's"):
                return []  # "I'm into my third week": a count, not a taste
            value = f"is {verb}"
        facts = []
        for item in [said, *more, *(_more_items(match) if form in ("verb", "is", "since") else [])]:
            found = _thing(item)
            if found is None:
                break
            subject = found[0]
            words = [w for w in _words(subject) if w not in ("a", "an", "the", "good", "some")]
            activity = words[0].endswith("ing") and words[0] not in ("eating", "drinking") and words[0] not in _FOODS
            food = not activity and _food_like([w for w in words if w not in ("eating", "drinking")])
            facts.append(_fact(subject, "taste" if food else "opinion", value))
        return facts

    return build


_FAN_SIZES = frozenset({"big", "huge", "massive", "great", "giant", "real", "total", "lifelong", "long-time",
                        "longtime", "die-hard", "diehard", "proper", "such", "biggest", "fan", "number", "no"})
# "The X" is liked in general only for a few things ("I love the ocean", "I hate the cold", "the sound of rain");
# anything else is what is in front of the speaker ("I love the colours!", "I love the energy").
_GENERAL_THE = frozenset("""
    ocean oceans sea seaside beach beaches outdoors countryside mountains mountain city rain snow cold heat sun
    sunshine summer winter autumn spring fall quiet silence theatre theater cinema movies gym woods forest night
    dark stars moon radio news holidays weekend weekends wind beatles
""".split())
# Words after a comma that go on with a liked thing rather than start a clause ("creating a safe, inviting space").
_CLAUSE_STARTS = frozenset({
    "i", "i'm", "i've", "i'd", "it", "it's", "its", "they", "they're", "we", "we're", "he", "she", "you", "that",
    "that's", "which", "who", "and", "but", "so", "or", "because", "cause", "cos", "especially", "like", "the",
    "although", "though", "plus", "also", "honestly", "lol", "haha", "not", "no", "yes", "yeah", "there", "this",
    "my", "me", "as", "if", "when", "what", "how", "always", "even", "just", "really", "too", "oh", "thanks",
    "sadly", "weirdly", "seriously", "anyway", "btw", "tbh", "omg", "ugh", "sorry", "then", "now",
    "for", "at", "in", "on", "to", "with", "from", "since", "x", "xx", "'cause", "cuz", "coz", "bc",
})
_LOOSE_ENDS = frozenset({"a", "an", "the", "of", "to", "with", "and", "or", "my", "your", "for", "in", "on", "at",
                         "about", "from", "by", "even", "very", "so", "such", "some", "any", "all", "more"})


def _a_taste(said: str, match: re.Match[str]) -> bool:
    """Whether a liked thing is a standing taste rather than a reaction or a cut-off phrase."""
    words = _words(said)
    if not words or words[-1] in _LOOSE_ENDS or " ".join(words) in _VAGUE_THINGS:
        return False
    if words[0] == "all" and len(words) > 1 and words[1] == "the":
        return False
    senses = len(words) > 3 and words[1] in ("sound", "smell", "taste", "feel", "look") and words[2] == "of"
    if words[0] == "the" and not (len(words) > 1 and (words[-1] in _GENERAL_THE or senses)):
        return False
    rest = match.string[match.end():]
    if re.match(r"\s+like\s+(?:this|that|these|those|it|them)\b", rest, re.I) or (
            words[-1] in ("people", "places", "ones") and re.match(r"\s+(?:who|that|which|where|like)\b", rest)):
        return False  # "being in places like this", "being with people who...": cut where it mattered
    after = re.match(r"\s*,\s*([\w'-]+)", rest)
    cut_off = len(words) > 1 and words[-2] in _DETERMINERS  # "a safe, inviting place": an adjective, cut off
    return not (cut_off and after and after.group(1).lower() not in _CLAUSE_STARTS and after.group(1)[:1].islower())


_CLAUSE_VERB = re.compile(r"\s+(?:is|are|was|were|has|have|had)\b", re.I)
_DETERMINERS = frozenset({"a", "an", "the", "my", "your", "our", "their", "this", "that", "such", "some", "his",
                          "her"})
_LIST_ITEM = re.compile(r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)([^.,!?;:()]{1,40}?)"
                        r"(?=\s*(?:[.,!?;:)]|$)|\s+(?:and|or)\s+|\s+[-\u2013\u2014])")


def _more_items(match: re.Match[str]) -> list[str]:
    """The rest of a list of liked things ("I enjoy reading, watching films, and exploring nature"): items while
    each reads as a thing of its own, up to four."""
    items: list[str] = []
    position = match.end()
    while len(items) < 4 and (item := _LIST_ITEM.match(match.string, position)) is not None:
        said = item.group(1).strip()
        words = _words(said)
        if not words or words[0] in _CLAUSE_STARTS or _thing(said) is None or not _a_taste(said, item):
            break
        items.append(said)
        position = item.end()
    return items


_INSTRUMENTS = ("guitar", "acoustic guitar", "electric guitar", "bass guitar", "bass", "piano", "keyboard", "violin",
                "viola", "cello", "double bass", "drums", "clarinet", "flute", "saxophone", "sax", "trumpet",
                "trombone", "ukulele", "uke", "harp", "banjo", "harmonica", "oboe", "accordion", "mandolin", "organ")
_GAMES = ("football", "soccer", "basketball", "tennis", "golf", "chess", "rugby", "cricket", "hockey", "ice hockey",
          "volleyball", "badminton", "squash", "netball", "baseball", "softball", "padel", "pickleball", "poker",
          "bridge", "table tennis", "ping pong", "darts", "pool", "snooker", "video games", "board games",
          "dungeons and dragons", "d&d", "dnd", "lacrosse", "handball", "water polo", "frisbee", "ultimate frisbee",
          "bowls", "bowling")
_DOINGS = ("yoga", "pilates", "karate", "judo", "jiu-jitsu", "jiu jitsu", "bjj", "crossfit", "kickboxing", "boxing",
           "martial arts", "taekwondo", "kung fu", "ballet", "parkour", "archery", "pottery", "gymnastics",
           "fencing", "rowing", "weightlifting", "powerlifting", "calisthenics", "tai chi", "zumba", "salsa",
           "ballroom", "aerial yoga", "spin", "triathlons", "marathons", "photography", "woodwork", "embroidery",
           "crochet", "calligraphy", "improv", "stand-up", "karaoke")
# Activities said as a gerund ("I started surfing five years ago") or by the one who does them ("I'm a runner").
_SPORT_GERUNDS = frozenset({
    "surfing", "running", "swimming", "climbing", "bouldering", "skating", "skateboarding", "cycling", "hiking",
    "painting", "knitting", "dancing", "boxing", "skiing", "snowboarding", "baking", "gardening", "sewing",
    "drawing", "sketching", "writing", "journaling", "fishing", "sailing", "kayaking", "canoeing", "rowing",
    "diving", "scuba diving", "horse riding", "horseback riding", "riding", "gaming", "coding", "singing",
    "jogging", "crocheting", "quilting", "woodworking", "birdwatching", "camping", "golfing", "meditating",
    "lifting", "weightlifting", "rock climbing", "mountain biking", "biking", "archery", "fencing", "wrestling",
    "kickboxing", "acting", "modelling", "modeling", "volunteering", "blogging", "vlogging", "streaming",
    "podcasting", "composing", "dj-ing", "djing", "skydiving", "paddleboarding", "trail running",
})
_DOERS = {"runner": "running", "swimmer": "swimming", "climber": "climbing", "surfer": "surfing", "gamer": "gaming",
          "cyclist": "cycling", "hiker": "hiking", "skier": "skiing", "snowboarder": "snowboarding", "golfer": "golf",
          "skater": "skating", "skateboarder": "skateboarding", "knitter": "knitting", "baker": "baking",
          "gardener": "gardening", "gymgoer": "the gym", "yogi": "yoga", "boxer": "boxing", "sailor": "sailing",
          "diver": "diving", "birdwatcher": "birdwatching", "marathoner": "marathons", "marathon runner": "running",
          "triathlete": "triathlons", "chess player": "chess", "guitarist": "guitar", "pianist": "piano",
          "violinist": "violin", "drummer": "drums", "cellist": "cello", "blogger": "blogging"}


def _hobby(value: str) -> Build:
    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        said = " ".join(match.group("activity").lower().split())
        activity = _DOERS.get(said, said)
        plays = any(activity == g or activity.endswith(f" {g}") for g in (*_INSTRUMENTS, *_GAMES, "golf"))
        if value == "doer" and activity in ("the gym",):
            return []
        return [_fact(re.sub(r"^the\s+", "", activity), "hobby",
                      "plays" if plays else "does" if value in ("doer", "started") else value)]

    return build


def _favourite(match: re.Match[str], text: str, *, before: bool) -> list[ExtractedFact]:
    """"My favourite film is Alien", "Star Wars is my favourite fantasy film"."""
    kind = " ".join(_words(match.group("kind")))
    head = kind.split()[-1] if kind else ""
    if _singular(head) not in _FAVOURITE_KINDS and head not in _FAVOURITE_KINDS:
        return []
    if any(w in _NOT_THINGS_ANYWHERE or w in _PEOPLE_WORDS for w in kind.split()):
        return []
    said = match.group("value")
    value = _item(said, food=False)
    if value is None:
        return []
    if before and not (_NAME_WORD.match(value) or _food_like(_words(value))):
        return []  # "that is my favourite song": only a name or a food stands before "is my favourite"
    return [_fact(kind, "favourite", value)]


def _has(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I have two cats", "we've got three kids", "I don't have kids": how many, by kind."""
    said = " ".join(match.group("kind").lower().split())
    kind = _PET_KINDS.get(said) or _CHILD_KINDS.get(said)
    if kind is None:
        return []
    groups = match.groupdict()
    count = {"this": "a", "these": "some"}.get(groups["count"].lower(), groups["count"].lower())
    if count == "a" and said[:1] in "aeiou":
        count = "an"
    if count in ("a", "an", "one") and said.endswith("s") and said not in ("fish", "goldfish"):
        return []  # "a kids' party"
    mods = " ".join((groups.get("mods") or "").lower().split())
    return [_fact(kind, "has", " ".join(w for w in (count, mods, said) if w))]


def _no_pets(match: re.Match[str], text: str) -> list[ExtractedFact]:
    said = match.group("kind").lower()
    subject = {"pets": "pet", "pet": "pet"}.get(said) or _CHILD_KINDS.get(said) or _PET_KINDS.get(said)
    return [_fact(subject, "has", f"no {said}")] if subject else []
