"""The builders for who the user is: their name and the names of the people and animals in their life, where they
live and come from, their work and school and the changes to them, who they live with, their relationship and
birthdays."""

from __future__ import annotations

import re

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import GRADUATED_FROM, RELATIONSHIP_STATUSES
from traces.facts.guards import _AFTER, _NOT_HOME_NOW, _ONLY_A_WHILE
from traces.facts.lexicon import (
    _COMPANY_WORDS,
    _GROUPS,
    _JOB_CONTEXT,
    _MONTHS,
    _NOT_A_JOB,
    _NOT_JOB_WORDS,
    _NOT_NAMES,
    _SCHOOL_WORDS,
    _STUDYING,
)
from traces.facts.values import _NOT_THINGS_ANYWHERE, _date, _ended, _fact, _person, _proper, _role_of, _words

# Each builder gets the match and the whole (normalised) turn, and returns its facts, or [] to reject the match.


def _user_name(match: re.Match[str], text: str) -> list[ExtractedFact]:
    name = _person(match)
    return [_fact("user", "name", name)] if name else []


def _role_name(match: re.Match[str], text: str) -> list[ExtractedFact]:
    name = _person(match)
    if name is None:
        return []
    if re.match(r",", match.string[match.end("role"):].lstrip()) and re.match(
            r"\s*(?:,\s*)?(?:and|&)\s+(?:I|me|my)\b", match.string[match.end():]):
        return []  # "my girlfriend, Toby and I": a list of three, not her name
    role = _role_of(match)
    return [_fact(f"user's {role}", "name", name)]


def _role_died(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"My dog Luna died", "we had to put our cat down": the death, and the name when it was said."""
    role = _role_of(match)
    name = _person(match) if match.group("name") else None
    died = _fact(f"user's {role}", "died", name or "died")
    return [_fact(f"user's {role}", "name", name), died] if name else [died]


def _role_home(match: re.Match[str], text: str) -> list[ExtractedFact]:
    place = _proper(match.group("place"))
    if place is None:
        return []
    role = _role_of(match)
    plural = role.split()[-1] in _GROUPS
    said = " ".join((match.group("verb") or "").lower().split())
    if not plural and said in ("live", "are living"):
        # "Me and my boyfriend live in Hackney": the user lives there too; anything else is not a sentence.
        if re.search(r"\b(?:me|I)\s+and\s*$", match.string[:match.start()], re.I):
            return [_fact("user", "lives_in", place)]
        return []
    return [_fact(f"user's {role}", "lives_in", place)]


def _role_employer(match: re.Match[str], text: str) -> list[ExtractedFact]:
    org = _proper(match.group("org") or match.group("org2"))
    if org is None:
        return []
    role = _role_of(match)
    return [_fact(f"user's {role}", "works_at", org)]


def _role_birthday(match: re.Match[str], text: str) -> list[ExtractedFact]:
    role, date = _role_of(match), _date(match.group("date"))
    return [_fact(f"user's {role}", "birthday", date)]


def _lives_in(match: re.Match[str], text: str) -> list[ExtractedFact]:
    place = _proper(match.group("place"))
    if place is None or _NOT_HOME_NOW.match(match.string, match.end(), match.end() + _AFTER):
        return []
    return [_fact("user", "lives_in", place)]


def _moved_to(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I moved to X" is where the user lives, unless the move was for a while ("for six months")."""
    return [] if _ONLY_A_WHILE.match(match.string, match.end(), match.end() + _AFTER) else _lives_in(match, text)


def _hometown(match: re.Match[str], text: str) -> list[ExtractedFact]:
    place = _proper(match.group("place"))
    return [_fact("user", "hometown", place)] if place else []


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
    if org and said_job and _words(said_job)[-1] in _STUDYING:
        facts.append(_fact("user", "studies_at", org))  # "a student at Leeds Uni" studies there
    elif org:
        facts.append(_fact("user", "works_at", org))
    return facts


def _birthday(match: re.Match[str], text: str) -> list[ExtractedFact]:
    date = _date(match.group("date"))
    return [_fact("user", "birthday", date)]


def _birthday_month(match: re.Match[str], text: str) -> list[ExtractedFact]:
    month = _MONTHS[match.group("month").lower()]
    return [_fact("user", "birthday", month)]
_OWN_BUSINESS = ("business", "biz", "company", "studio", "store", "shop", "bakery", "café", "cafe", "restaurant",
                 "salon", "practice", "firm", "agency", "brand", "label", "clinic", "gym", "startup", "start-up",
                 "consultancy", "boutique", "bar", "pub", "farm", "gallery", "nursery", "school", "charity",
                 "dance studio", "yoga studio", "clothing store", "online store", "online shop", "food truck")


def _own_business(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I run my own dance studio", "I started my own online clothing store": the user works for themselves."""
    kind = " ".join(match.group("business").lower().split())
    return [_fact("user", "works_at", f"their own {kind}")]


def _school(name: str) -> bool:
    return name.split()[-1].lower() in _SCHOOL_WORDS or name.lower().startswith(("university", "college"))


def _company(name: str) -> bool:
    return name.split()[-1].lower() in _COMPANY_WORDS


def _outside(match: re.Match[str], text: str) -> str:
    """The turn without the match itself: what the rest of it says."""
    sentence = match.string
    return text.replace(sentence, sentence[: match.start()] + " " + sentence[match.end():])


def _org_of(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    return _proper(groups.get("org") or groups.get("org2"))


def _joined(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I've joined Orbit Foods": an employer when the name says so, the turn talks of work, or a job is given."""
    org = _org_of(match)
    if org is None:
        return []
    if _school(org):
        return [_fact("user", "studies_at", org)]
    if not (_company(org) or match.groupdict().get("job") or _JOB_CONTEXT.search(_outside(match, text))):
        return []
    return _employment(match, text)


def _started_at(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I started at X", "I'm starting at X": a school is where the user studies, anything else an employer."""
    org = _org_of(match)
    if org is None:
        return []
    if _school(org) or match.groupdict().get("study"):
        return [_fact("user", "studies_at", org)]
    return _employment(match, text)


def _left_job(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I quit my job at Deloitte", "I've left Kestrel Media", "I got laid off": the employer slot ends."""
    groups = match.groupdict()
    org = _org_of(match)
    if org is None:
        if groups.get("org") or groups.get("org2"):
            return []
        left = [_fact("user", "works_at", "left their job")] if groups.get("myjob") or groups.get("off") else []
        return _with_former_job(left, match)
    if _school(org):
        return [_ended("studies_at", org)]
    return _with_former_job([] if _not_an_employer(match, text, org) else [_ended("works_at", org)], match)


def _with_former_job(facts: list[ExtractedFact], match: re.Match[str]) -> list[ExtractedFact]:
    """"I lost my job as a banker": the job ends too."""
    job = match.groupdict().get("job")
    return [*facts, _ended("occupation", " ".join(_words(job)))] if facts and job else facts


def _not_an_employer(match: re.Match[str], text: str, org: str) -> bool:
    groups = match.groupdict()
    verb = " ".join((groups.get("verb") or "").lower().split())
    named_job = groups.get("myjob") or groups.get("off")
    # "I left London", "I quit Twitter": not an employer unless the words say so
    return not named_job and not _company(org) and (verb == "left" or not _JOB_CONTEXT.search(_outside(match, text)))


def _no_longer_works(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I don't work at Orbit Foods any more"; "I don't work at the bank any more" (unnamed: left their job)."""
    org = _org_of(match)
    if org is not None:
        return [_ended("studies_at" if _school(org) else "works_at", org)]
    return [_fact("user", "works_at", "left their job")]


def _unemployed(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact("user", "works_at", "left their job")]


def _retired(match: re.Match[str], text: str) -> list[ExtractedFact]:
    facts = [_fact("user", "occupation", "retired")]
    org = _org_of(match)
    if org is not None:
        facts.append(_ended("works_at", org))
    return facts


def _former_job(match: re.Match[str], text: str) -> list[ExtractedFact]:
    job = " ".join(_words(match.group("job")))
    return [_ended("occupation", job)] if job else []


def _studies_at(match: re.Match[str], text: str) -> list[ExtractedFact]:
    org = _org_of(match)
    if org is None or (match.groupdict().get("gate") and not _school(org)):
        return []
    return [_fact("user", "studies_at", org)]


def _graduated(match: re.Match[str], text: str) -> list[ExtractedFact]:
    org = _org_of(match)
    if org is None:
        return [] if match.groupdict().get("org") else [_fact("user", "studies_at", "graduated")]
    return [_fact("user", "studies_at", f"{GRADUATED_FROM} {org}")]


def _dropped_out(match: re.Match[str], text: str) -> list[ExtractedFact]:
    org = _org_of(match)
    return [_ended("studies_at", org)] if org else []


def _companion(match: re.Match[str]) -> str | None:
    """Who the user lives with, in the server's words: "their boyfriend", "their parents", "Sam and Alex"."""
    groups = match.groupdict()
    if groups.get("alone"):
        return "alone"
    if groups.get("role"):
        return f"their {_role_of(match)}" if groups.get("keep") else f"their {groups['role'].lower()}"
    names = [_proper(n) for n in re.split(r"\s+(?:and|&)\s+", groups.get("who") or "")]
    if not names or any(n is None or n.lower() in _NOT_NAMES for n in names):
        return None
    next_word = re.match(r"\s+([\w'-]+)", match.string[match.end():])
    if next_word and next_word.group(1).lower() not in _AFTER_COMPANION:
        return None  # "I live with Crohn's disease", "I live with Type 1 diabetes"
    return " and ".join(n for n in names if n)


# Words that may follow who the user lives with ("I live with Sam in Leeds"); any other word makes the name part of
# something else ("I live with Crohn's disease").
_AFTER_COMPANION = frozenset({
    "in", "and", "now", "who", "since", "for", "near", "at", "but", "so", "because", "cos", "lol", "haha", "too",
    "these", "right", "here", "there", "which", "until", "while", "btw", "tbh", "actually", "anyway", "currently",
    "nowadays", "again", "last", "this", "on", "off", "by", "after", "as", "we", "it", "it's", "he", "she", "they",
    "any", "anymore", "no", "full-time", "part-time", "temporarily",
})


def _lives_with(match: re.Match[str], text: str) -> list[ExtractedFact]:
    who = _companion(match)
    return [_fact("user", "lives_with", who)] if who else []


def _no_longer_lives_with(match: re.Match[str], text: str) -> list[ExtractedFact]:
    who = _companion(match)
    return [_ended("lives_with", who)] if who and who != "alone" else []


def _no_longer_lives_in(match: re.Match[str], text: str) -> list[ExtractedFact]:
    place = _proper(match.group("place"))
    return [_ended("lives_in", place)] if place else []


_STATUS_WORDS = {"a widow": "widowed", "a widower": "widowed", "seeing someone": "in a relationship",
                 "dating someone": "in a relationship", "not single": "in a relationship"}


def _relationship(match: re.Match[str], text: str) -> list[ExtractedFact]:
    said = " ".join((match.groupdict().get("status") or "broken up").lower().split())
    status = _STATUS_WORDS.get(said, said)
    if status.startswith(("in a", "in an")) or status in ("dating", "seeing"):
        status = "in a relationship"
    return [_fact("user", "relationship", status)] if status in RELATIONSHIP_STATUSES else []
