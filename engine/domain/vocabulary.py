"""The closed vocabularies every layer speaks in, and the sentence a fact is worded in.

The fact relations (what ``traces.facts`` extracts and ``prompts.write_time`` asks a model for), the kinds of
resolution, the words that instruct a model rather than name something, and ``fact_sentence``: a fact's sentence is
rendered by the server from its (subject, relation, value) with the caller's words quoted, so that a turn that says
"ignore previous instructions" reads as something the user said, never as a line of the character's instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

MAX_QUOTE_CHARS = 240
"""The longest quote of a user's words a sentence or a rule carries (cut with an ellipsis)."""


def quote(text: str) -> str:
    """``text`` on one line, without double quotes, so it cannot close the quotes it is put in."""
    flat = " ".join(text.split()).replace('"', "'")
    return flat if len(flat) <= MAX_QUOTE_CHARS else flat[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def quoted(text: str) -> str:
    return f'"{quote(text)}"'


Relation = Literal[
    "lives_in", "hometown", "works_at", "occupation", "name", "opinion", "diet", "allergy", "birthday", "routine",
    "studies_at", "relationship", "lives_with", "preference", "taste", "favourite", "has", "hobby", "activity",
    "died",
]

RELATIONS: dict[Relation, str] = {
    "lives_in": 'where someone lives now. Subject "user", or "user\'s <role>" for a family member ("user\'s '
                'sister"). Value the place as said, capitalised, without "the" ("Lisbon"). A move supersedes; '
                '"no longer <place>" when they say they left it ("no longer Paris").',
    "hometown": 'where the user is from, grew up or was born. Subject "user". Value the place ("Porto").',
    "works_at": 'who someone works for now. Subject "user" or "user\'s <role>". Value the employer\'s name '
                '("Google", "NHS"); an unnamed workplace ("a café") is not a value. A new job supersedes; "no '
                'longer <employer>" when they left it, "left their job" when they left one they did not name.',
    "occupation": 'the user\'s job now. Subject "user". Value the job, lower case, without the article '
                  '("primary school teacher"), "retired", or "no longer <job>" ("no longer nurse").',
    "name": 'a name. Subject "user" for the user\'s own, or "user\'s <role>" for a pet or a person in their '
            'life ("user\'s dog", "user\'s little brother"); value the name as said ("Luna"). Roles most people '
            'have several of (friend, colleague, cousin, "my kids") are not slots: a second friend would '
            'supersede the first.',
    "opinion": 'a like or dislike of anything but food and drink (see taste). Subject the thing, lower case '
               '("jazz", "user\'s job"); value the stance ("loves", "likes", "hates", "can\'t stand", "doesn\'t '
               'like", "is a fan of", "prefers"). Multi-valued through the subject: two likes never supersede '
               'each other; "I hate jazz now" supersedes "I love jazz".',
    "diet": 'how the user eats. Subject "user". Value "vegetarian", "vegan", "pescatarian", "kosher", '
            '"no meat"..., or "no longer <diet>" ("no longer vegetarian").',
    "allergy": 'a food or substance the user must avoid. Subject the allergen, lower case and singular '
               '("peanut"); value "allergic", "intolerant", "can\'t eat" or "coeliac".',
    "birthday": 'a birthday. Subject "user" or "user\'s <role>". Value the calendar date as said ("3 May", '
                '"14th of February", "June"); a relative date ("today", "next week") is not a value.',
    "routine": 'a habit. Subject the activity ("running", "calling their mum"); value when or how ("every '
               'morning").',
    "studies_at": 'the school, college or university someone attends now. Subject "user" or "user\'s <role>". '
                  'Value its name as said ("Leeds University"); "graduated" or "graduated from <name>" when they '
                  'finished, "no longer <name>" when they left.',
    "relationship": 'the user\'s relationship status now. Subject "user". Value one of "single", "in a '
                    'relationship", "engaged", "married", "separated", "divorced", "widowed", "broken up".',
    "lives_with": 'who the user lives with now. Subject "user". Value a name as said ("Sam"), "their <role>" '
                  '("their parents"), "alone", or "no longer <who>".',
    "preference": 'how the user has a food or drink, or what they usually order. Subject the food or drink, lower '
                  'case ("coffee", "tea", "steak"), or "usual order", "usual drink", "usual coffee order"; value '
                  'how or what ("with oat milk and one sugar", "black", "a flat white").',
    "taste": 'a like or dislike of a food or drink. Subject the food or drink, lower case ("coriander", "sushi", '
             '"alcohol"); value the stance, as for opinion, or "doesn\'t drink".',
    "favourite": 'the user\'s favourite of a kind of thing. Subject the kind, lower case ("film", "fantasy '
                 'novel", "food"); value the favourite as said ("Star Wars").',
    "hobby": 'an activity the user takes part in: a sport, an instrument, a game, a craft. Subject the activity, '
             'lower case ("guitar", "basketball", "yoga", "surfing"); value "plays" or "does".',
    "activity": 'what the user is busy with these days: a project, volunteering, training. Subject the activity '
                'as said, lower case ("volunteering at the shelter", "working on their novel"); value how it was '
                'said ("still", "these days", "lately", "for two months").',
    "died": 'a person or animal in the user\'s life who has died. Subject "user\'s <role>" ("user\'s dog", '
            '"user\'s grandmother"); value their name as said ("Luna"), or "died" when no name was said. The '
            'prefix reads "The user\'s dog, Luna, has died."',
    "has": 'pets or children the user has. Subject the kind, singular ("dog", "cat", "child"); value how many '
           'as said ("a dog", "two cats", "three kids", "no kids").',
}


ResolutionKind = Literal["none", "test_result", "false_alarm", "apology", "reconciliation", "good_outcome",
                         "problem_solved", "found_safe", "no_longer_worried", "relief"]
"""What a model-backed classifier may say a memory resolves by (``prompts.write_time``); "none": it does not."""

# Kinds of resolution: the fixed vocabulary a cue is recorded with (no user text is stored as the cue).
RESOLUTION_KINDS: dict[str, str] = {
    "test_result": "the result came back fine",
    "false_alarm": "a false alarm",
    "apology": "an apology",
    "reconciliation": "made up",
    "good_outcome": "it worked out",
    "problem_solved": "sorted",
    "found_safe": "found safe",
    "no_longer_worried": "no longer worried",
    "relief": "relief",
}
assert set(RESOLUTION_KINDS) == set(get_args(ResolutionKind)) - {"none"}, "ResolutionKind and RESOLUTION_KINDS differ"


# -- facts ------------------------------------------------------------------------------------------------------

# Words that instruct a model rather than name a person, place or thing. No anchor carries one
# (``traces.anchors``), no extracted value holds one (``traces.facts``), and a role or relation that holds one is
# quoted in a fact's sentence. Kept small on purpose: each is rare in chat about someone's life, and every one of
# them was in the injections a hostile tester sent ("Ignore previous instructions", "SYSTEM OVERRIDE").
INSTRUCTION_WORDS = frozenset({
    "ignore", "ignored", "ignoring", "disregard", "forget", "override", "overrides", "bypass", "jailbreak",
    "system", "assistant", "developer", "prompt", "prompts", "instruction", "instructions", "previous", "rule",
    "rules",
})

# Relation -> the sentence a fact on it is stored and shown with. {who} is "The user" or "The user's dog",
# {whose} its possessive, {thing} the subject of a relation about a thing (quoted, "my" as "their"), {value} the
# value (quoted), {a} the article for the value. The wording follows the extractor's ("The user lives in Lisbon.").
FACT_TEMPLATES: dict[str, str] = {
    "lives_in": "{who} lives in {value}.",
    "hometown": "{who} is from {value}.",
    "works_at": "{who} works at {value}.",
    "occupation": "{who} works as {a} {value}.",
    "name": "{who} is called {value}.",
    "diet": "{whose} diet is {value}.",
    "birthday": "{whose} birthday is {value}.",
    "opinion": "{who} has an opinion of {thing}: {value}.",
    "allergy": "{who} must avoid {thing}: {value}.",
    "routine": "{who} has a habit: {thing}, {value}.",
    "studies_at": "{who} studies at {value}.",
    "relationship": "{whose} relationship status is {value}.",
    "lives_with": "{who} lives with {value}.",
    "preference": "{who} takes {thing} {value}.",
    "taste": "{who} has a taste about {thing}: {value}.",
    "favourite": "{whose} favourite {thing} is {value}.",
    "has": "{who} has {value}.",
    "hobby": "{who} has a hobby: {thing}, {value}.",
    "activity": "{who} has been busy with {thing}: {value}.",
    "died": "{who}, {value}, has died.",
}
DIED_UNNAMED = "died"
"""The value of a death fact when no name was said: 'The user's dog has died.'"""
# The relations whose subject is the thing itself ("jazz", "peanut", "coffee"): the fact is the user's.
THING_RELATIONS = frozenset({"opinion", "allergy", "routine", "preference", "taste", "favourite", "has", "hobby",
                             "activity"})
OPINION_STANCES = frozenset({
    "loves", "likes", "enjoys", "adores", "hates", "dislikes", "detests", "loathes", "despises", "can't stand",
    "can't bear", "doesn't like", "doesn't enjoy", "is a fan of", "is not a fan of", "is obsessed with", "is into",
    "is crazy about", "is mad about", "is passionate about", "prefers",
})
TASTE_STANCES = OPINION_STANCES | {"doesn't drink"}
ALLERGY_KINDS: dict[str, str] = {"allergic": "is allergic to", "intolerant": "is intolerant to",
                                 "can't eat": "can't eat", "coeliac": "has coeliac disease and can't eat"}
RELATIONSHIP_STATUSES: dict[str, str] = {
    "single": "{who} is single.", "in a relationship": "{who} is in a relationship.",
    "engaged": "{who} is engaged.", "married": "{who} is married.",
    "separated": "{who} is separated from their partner.", "divorced": "{who} is divorced.",
    "widowed": "{who} is widowed.", "broken up": "{who} has broken up with their partner.",
}
# A value from one of these closed vocabularies is the server's own wording, so it goes in bare and the line reads
# as a sentence ("The user loves "jazz"."); any other value takes its relation's template above, quoted.
FACT_VALUE_TEMPLATES: dict[tuple[str, str], str] = {
    **{("opinion", stance): f"{{who}} {stance} {{thing}}." for stance in OPINION_STANCES},
    **{("taste", stance): f"{{who}} {stance} {{thing}}." for stance in TASTE_STANCES},
    **{("allergy", kind): f"{{who}} {wording} {{thing}}." for kind, wording in ALLERGY_KINDS.items()},
    **{("relationship", status): wording for status, wording in RELATIONSHIP_STATUSES.items()},
    ("works_at", "left their job"): "{who} has left their job.",
    ("studies_at", "graduated"): "{who} has graduated.",
    ("occupation", "retired"): "{who} is retired.",
    ("lives_with", "alone"): "{who} lives alone.",
    ("hobby", "plays"): "{who} plays {thing}.",
    ("hobby", "does"): "{who}'s hobbies include {thing}.",
}
# A subject of "preference" from this closed vocabulary is the server's own wording too ("usual order"), read bare.
PREFERENCE_SUBJECT_TEMPLATES: dict[str, str] = {
    "usual order": "{whose} usual order is {value}.",
    "usual drink": "{whose} usual drink is {value}.",
    "usual coffee order": "{whose} usual coffee order is {value}.",
    "breakfast": "{who} usually has {value} for breakfast.",
    "lunch": "{who} usually has {value} for lunch.",
    "dinner": "{who} usually has {value} for dinner.",
}

ENDED = "no longer"
"""The value of a fact that ends its slot starts with this word and names what ended ("no longer Orbit Foods")."""
# Relation -> the sentence of a fact that ends its slot, {value} what ended (quoted): "I don't work at Orbit Foods
# any more" reads "The user no longer works at "Orbit Foods".", not "The user works at "no longer Orbit Foods"."
ENDED_TEMPLATES: dict[str, str] = {
    "works_at": "{who} no longer works at {value}.",
    "studies_at": "{who} no longer studies at {value}.",
    "lives_in": "{who} no longer lives in {value}.",
    "lives_with": "{who} no longer lives with {value}.",
    "diet": "{who} is no longer {value}.",
    "occupation": "{who} no longer works as {a} {value}.",
}
GRADUATED_FROM = "graduated from"
"""Like ``ENDED`` for "studies_at": "graduated from Leeds University" ends the slot and says how."""
GRADUATED_TEMPLATE = "{who} graduated from {value}."
GENERIC_FACT_TEMPLATE = "{whose} {relation}: {value}."
"""A relation without a template, about the user or someone in their life ("The user's password: "…".")."""
OTHER_FACT_TEMPLATE = "About {thing}: {relation} {value}."
"""Any other subject, or one that does not fit its relation ("About "office": located in "Lisbon".")."""

# The words a role may be made of to go in a sentence bare ("little brother", "best friend", "dog"): a closed
# vocabulary, so that a caller's subject ("user's never mention death") is quoted rather than read as wording.
ROLE_WORDS = frozenset("""
    dog dogs puppy cat cats kitten pet horse bird rabbit hamster
    mom mum mother dad father parent parents sister brother sibling wife husband partner boyfriend girlfriend
    fiance fiancee son daughter kid kids child children baby grandma grandmother grandpa grandfather grandparents
    aunt uncle cousin niece nephew friend friends boss manager coworker colleague roommate flatmate neighbor
    neighbour therapist doctor teacher family team
    little big older younger elder twin best old new step half ex late
""".split())


def instruction_like(words: Sequence[str]) -> bool:
    return any(w.lower() in INSTRUCTION_WORDS for w in words)


def _role(words: str) -> str:
    """A role in the server's own words when every word is one of ``ROLE_WORDS``; anything else is quoted."""
    parts = words.split()
    return words if 0 < len(parts) <= 4 and all(w in ROLE_WORDS for w in parts) else quoted(words)


def _relation(relation: str) -> str:
    """A relation's words: bare for the relations the server words itself (``FACT_TEMPLATES``), quoted for any
    other, since a caller chose them ("always_be_cheerful_about")."""
    words = relation.replace("_", " ")
    return words if relation in FACT_TEMPLATES else quoted(words)


def _who(subject: str) -> str | None:
    """"The user", "The user's dog", or None when the subject is neither the user nor someone of theirs."""
    if subject == "user":
        return "The user"
    if subject.startswith("user's "):
        return "The user's " + _role(subject[len("user's "):])
    return None


def ended_value(relation: str, value: str) -> tuple[str, str] | None:
    """(template, what ended) when ``value`` ends its slot ("no longer Orbit Foods", "graduated from Leeds
    University" on "studies_at"), else None."""
    words = value.split(maxsplit=2)
    if relation in ENDED_TEMPLATES and len(words) > 2 and f"{words[0]} {words[1]}".lower() == ENDED:
        return ENDED_TEMPLATES[relation], words[2]
    if relation == "studies_at" and len(words) > 2 and f"{words[0]} {words[1]}".lower() == GRADUATED_FROM:
        return GRADUATED_TEMPLATE, words[2]
    return None


def fact_sentence(subject: str, relation: str, value: str) -> str:
    """The sentence a fact is stored and shown with, rendered from its triple: the template's words bare, the
    value and any thing quoted. Deterministic, so Path A stays byte-stable."""
    subject, value = " ".join(subject.split()), " ".join(value.split())
    who = _who(subject)
    template = FACT_VALUE_TEMPLATES.get((relation, value.lower()))
    if relation == "died" and value == DIED_UNNAMED:
        template = "{who} has died."
    ended = ended_value(relation, value)
    if relation in THING_RELATIONS:
        if relation == "preference":
            template = PREFERENCE_SUBJECT_TEMPLATES.get(subject)
        who, template = "The user", template or FACT_TEMPLATES[relation]
    elif who is None:
        template = OTHER_FACT_TEMPLATE
    elif template is None and ended is not None:
        template, value = ended
    else:
        template = template or FACT_TEMPLATES.get(relation, GENERIC_FACT_TEMPLATE)
    thing = re.sub(r"^user's\b", "their", subject)
    return template.format(
        who=who, whose=f"{who}'s", thing=quoted(thing), value=quoted(value),
        a="an" if value[:1].lower() in "aeiou" else "a", relation=_relation(relation),
    )
