"""Frozen v1 of the fact extractor (``traces/facts.py`` at 7df002f), kept unchanged as the baseline for ``feltsense
eval facts``; the engine uses ``traces.facts``.

Durable facts in what the user says, extracted without a model, as (subject, relation, value) triples.

Each fact also carries one self-contained sentence about the user ('The user lives in "Lisbon".'): the write-time
pass keeps the sentences in the trace and the lexical index learns their words, so "where I live" finds "I moved
to Lisbon" even though the user never said "live". The sentence is the server's template for the triple
(``prompts.wording.fact_sentence``, the same for facts written over the API), never the user's wording. The triple
names a slot, ``(subject, relation)``, so a later fact on the same slot can supersede an earlier one (see
``engine.domain.models.ExtractedFact``).

Precision matters more than recall: a wrong fact is recalled as if the user had said it, a missing one is only a
missed chance. So every pattern is anchored on a first-person statement in the present ("I live in", "I'm a
nurse", "my dog's name is"), values that cannot be checked by shape come from small lexicons (jobs, allergens),
and a match is dropped when its clause is hedged or reported ("if", "might", "I think", "she said"), when the
sentence undoes it ("anymore", "no longer") or when the sentence is a question. Past tense never matches ("I
lived in Rome", "I used to love jazz"), and names and places must be capitalised, since chat is full of lower-case
words that only look like them. Last, every value must have its relation's shape (``well_formed``): a Title-Case
instruction ("I work at the System Says Be Cheerful About Luna") is capitalised too, but it is not a name.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import ALLERGY_KINDS, INSTRUCTION_WORDS, OPINION_STANCES, fact_sentence

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

# -- text shapes ------------------------------------------------------------------------------------------------
# Every pattern is compiled case-insensitively; the parts that must be capitalised turn that off with (?-i:...).

_CAP = r"(?-i:[A-ZÀ-ÖØ-Þ](?:[\w&-]|'(?=\w)|\.(?=\w))*)"
_PLACE_NAME = rf"{_CAP}(?:\s+(?:(?:of|upon|de|da|do|del|la|le|du|am|sur|en)\s+)?{_CAP}){{0,3}}"
_ORG_NAME = rf"{_CAP}(?:\s+(?:(?:of|for|and|&|the|de)\s+)?{_CAP}){{0,4}}"
_PERSON_NAME = rf"(?:(?-i:Dr|Mr|Mrs|Ms|Mx|Miss|Prof)\.?\s+)?{_CAP}(?:\s+{_CAP})?"


def _place(group: str = "place") -> str:
    return rf"(?:the\s+)?(?P<{group}>{_PLACE_NAME})"


def _org() -> str:
    """An employer: a capitalised name ("the NHS"), or an unnamed place given a name ("a bakery called Crumbs")."""
    return (rf"(?:(?:the\s+)?(?P<org>{_ORG_NAME})"
            rf"|(?:a|an)\s+(?:[\w'-]+\s+){{0,4}}?(?:called|named)\s+(?P<org2>{_ORG_NAME}))")


def _name(group: str = "name") -> str:
    return rf"(?P<{group}>{_PERSON_NAME})"


_ADV = (r"(?:(?:just|finally|recently|actually|now|also|still|currently|officially|really|absolutely|totally|"
        r"honestly|genuinely|seriously|truly|kind\s+of|kinda|sort\s+of|do|literally|definitely|properly|"
        r"already|usually|always|normally|generally|typically|deeply|secretly|even|so|"
        r"low\s*key)\s+)*")
_HABIT_ADV = r"(?:(?:usually|always|normally|generally|typically|often|still|also|now)\s+)?"

# Where an object phrase (a liked thing, how the coffee is taken) ends: punctuation or a word that starts
# another clause or an adjunct ("I love jazz so much", "I hate coriander, it tastes like soap").
_END = (r"(?=\s*(?:[.,!?;:)\]]|$)|\s+(?:and\s+(?:I|I'm|it|it's|they|he|she|we|you|then|also)|but|because|cause|"
        r"cos|since|so|though|although|while|when|whenever|if|unless|which|who|where|that's|lol|haha|lmao|tbh|"
        r"btw|honestly|especially|like|these\s+days|nowadays|lately|at\s+the\s+moment|right\s+now|now|anymore|"
        r"any\s+more|too|as\s+well|either|more\s+than|more|than|a\s+lot|so\s+much|very\s+much|to\s+bits|"
        r"with\s+a\s+passion|weirdly|actually|really|by\s+the\s+way|for|ever|all\s+the\s+time|in\s+general|"
        r"though|to\s+be\s+honest|x+|today|tonight|rn|this\s+(?:morning|afternoon|evening|week))\b)")

_MONTHS = {
    "january": "January", "february": "February", "march": "March", "april": "April", "may": "May",
    "june": "June", "july": "July", "august": "August", "september": "September", "october": "October",
    "november": "November", "december": "December", "jan": "Jan", "feb": "Feb", "mar": "Mar", "apr": "Apr",
    "jun": "Jun", "jul": "Jul", "aug": "Aug", "sep": "Sep", "sept": "Sept", "oct": "Oct", "nov": "Nov",
    "dec": "Dec",
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (rf"(?P<date>(?:{_ORDINAL}(?:\s+of)?\s+{_MONTH}|{_MONTH}\.?\s+(?:the\s+)?{_ORDINAL}\b)(?:,?\s+(?:\d{{4}}))?)"
         r"(?![\w/])")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Capitalised words that are not names or places even in a name's position. Month names are names too (April,
# June); a capitalised verb ("my dad Googled it") is told by what follows it, see _person.
_NOT_NAMES = frozenset({
    "i", "i'm", "i've", "i'd", "i'll", "god", "jesus", "christ", "lord", "omg", "lol", "haha", "lmao", "mum",
    "mom", "dad", "mummy", "daddy", "and", "but", "so", "or", "is", "was", "has", "had", "the", "this", "that",
    "it", "he", "she", "they", "we", "you", "my", "our", "his", "her", "their", "just", "also", "still", "now",
    "honestly", "today", "tomorrow", "yesterday", "tonight", "christmas", "easter", "here", "there", "back",
    "home", "fine", "good", "okay", "ok", "sorry", "not", "tired", "hell", "heaven", "work", "school", "uni",
    "college", "yes", "no", "yeah", "well", "oh", "hi", "hey", "hello", "thanks", "please", "what", "who",
    "why", "how", "when", "where", "lately", "recently", "again", "anyway", "btw", "tbh", "idk", "ugh",
    *_DAYS,
})
# Capitalised words that end a name or place rather than belong to it ("Lisbon Monday", "Leeds I think").
_NOT_PART_OF_NAMES = frozenset({"i", "i'm", "i've", "i'd", "i'll", "omg", "lol", "haha", "lmao", "today", "tomorrow",
                                "yesterday", "tonight", "christmas", "easter", "btw", "tbh", *_DAYS, *_MONTHS})
# A word in a name's position followed by one of these is a verb with its object ("my dad Googled it").
_OBJECT_WORDS = frozenset({"it", "me", "him", "her", "them", "us", "you", "that", "this", "the", "a", "an", "my",
                           "your", "his", "their", "our", "everyone", "everything", "something", "someone", "up",
                           "out", "off", "down"})

# -- people and animals -----------------------------------------------------------------------------------------

_PETS = ("dog", "puppy", "pup", "cat", "kitten", "kitty", "hamster", "rabbit", "bunny", "guinea pig", "parrot",
         "budgie", "bird", "horse", "pony", "tortoise", "turtle", "snake", "lizard", "gecko", "ferret",
         "goldfish", "fish", "rat", "hedgehog", "pet", "chinchilla", "cockatiel")
_PEOPLE = ("sister", "brother", "mum", "mom", "mother", "mama", "mam", "dad", "father", "papa", "wife", "husband",
           "partner", "boyfriend", "girlfriend", "fiancé", "fiancée", "fiance", "fiancee", "son", "daughter",
           "best friend", "bestie", "boss", "manager", "therapist", "counsellor", "counselor", "grandma",
           "grandmother", "granny", "gran", "nan", "nana", "nanna", "grandad", "granddad", "grandpa",
           "grandfather", "stepmum", "stepmom", "stepdad", "stepmother", "stepfather", "stepsister",
           "stepbrother", "half-sister", "half-brother", "sister-in-law", "brother-in-law", "mother-in-law",
           "father-in-law", "roommate", "flatmate", "housemate", "ex", "ex-boyfriend", "ex-girlfriend",
           "ex-husband", "ex-wife", "landlord", "landlady", "baby", "godmother", "godfather", "carer")
_GROUPS = ("parents", "grandparents", "in-laws", "folks")


def _alternation(words: tuple[str, ...]) -> str:
    """A regex alternation of ``words``, longest first, so "best friend" wins over a shorter word."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True))


# Descriptions that say which one ("my little brother") stay in the subject; ones that only colour it drop out.
_KEEP_MODS = r"little|big|older|younger|baby|twin|eldest|oldest|youngest|middle|elder|kid"
_DROP_MODS = (r"new|late|dear|darling|lovely|sweet|beautiful|gorgeous|crazy|annoying|amazing|wonderful|silly|lazy|"
              r"precious|adorable|grumpy|fluffy|beloved")


def _role(roles: tuple[str, ...] = (*_PETS, *_PEOPLE)) -> str:
    return rf"(?:(?:{_DROP_MODS})\s+)*(?:(?P<keep>{_KEEP_MODS})\s+)?(?P<role>{_alternation(roles)})"


# -- lexicons ---------------------------------------------------------------------------------------------------

_JOBS = (
    "nurse", "teacher", "doctor", "surgeon", "dentist", "paramedic", "midwife", "pharmacist", "vet",
    "veterinarian", "therapist", "counsellor", "counselor", "psychologist", "psychiatrist", "social worker",
    "care worker", "support worker", "youth worker", "carer", "caregiver", "engineer", "developer", "programmer",
    "designer", "architect", "accountant", "lawyer", "solicitor", "barrister", "paralegal", "attorney", "judge",
    "police officer", "firefighter", "soldier", "pilot", "flight attendant", "chef", "cook", "baker", "barista",
    "bartender", "waiter", "waitress", "cashier", "shop assistant", "sales assistant", "teaching assistant",
    "manager", "director", "consultant", "analyst", "scientist", "researcher", "professor", "lecturer", "tutor",
    "student", "intern", "apprentice", "librarian", "journalist", "writer", "author", "editor", "photographer",
    "artist", "illustrator", "animator", "musician", "singer", "actor", "actress", "dancer", "electrician",
    "plumber", "carpenter", "builder", "mechanic", "technician", "driver", "courier", "farmer", "gardener",
    "cleaner", "receptionist", "secretary", "administrator", "clerk", "banker", "broker", "estate agent",
    "realtor", "translator", "interpreter", "coach", "personal trainer", "instructor", "nanny", "childminder",
    "housekeeper", "hairdresser", "barber", "beautician", "optician", "physio", "physiotherapist",
    "radiographer", "optometrist", "porter", "security guard", "postman", "postwoman", "fisherman", "labourer",
    "welder", "plasterer", "roofer", "decorator", "painter", "statistician", "economist", "entrepreneur",
    "freelancer", "contractor", "civil servant", "caretaker", "janitor", "mathematician", "physicist", "chemist",
    "biologist", "medic", "anaesthetist", "anesthetist", "radiologist", "dietitian", "nutritionist", "doula",
    "stay at home mum", "stay at home mom", "stay at home dad", "stay at home parent", "stay-at-home mum",
    "stay-at-home mom", "stay-at-home dad", "stay-at-home parent", "zookeeper", "copywriter", "marketer",
    "recruiter", "surveyor", "tattoo artist", "mp", "gp",
)
# Words before a job that make the phrase a judgement, or not the job the user has now ("a terrible cook").
_NOT_JOB_WORDS = frozenset({
    "terrible", "awful", "bad", "good", "great", "decent", "brilliant", "amazing", "excellent", "lousy",
    "rubbish", "crap", "shit", "horrible", "poor", "better", "worse", "best", "worst", "natural", "born", "hard",
    "lazy", "total", "complete", "real", "big", "huge", "massive", "former", "ex", "aspiring", "wannabe",
    "failed", "would-be", "future", "amateur", "hobby", "frustrated", "secret", "closet", "bit", "kind", "sort",
    "of", "a", "an", "the", "and", "or", "to", "in", "with", "my", "your", "such", "little", "wee", "proud",
    "self-taught", "home", "not", "no", "very", "really", "pretty", "quite",
})
_STUDYING = frozenset({"student", "pupil"})  # "a student at Leeds Uni" studies there, does not work there
# After a job: it is a pastime, not the user's work ("I'm a writer in my spare time").
_NOT_A_JOB = re.compile(
    r"s?\s+(?:(?:[\w']+\s+){0,5}?)(?:in\s+my\s+(?:spare|free)\s+time|on\s+the\s+side|as\s+a\s+hobby|for\s+fun|"
    r"on\s+weekends)\b",
    re.I,
)
_DIETS = {"vegetarian": "vegetarian", "veggie": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
          "pescetarian": "pescatarian", "plant-based": "plant-based", "plant based": "plant-based",
          "gluten-free": "gluten-free", "gluten free": "gluten-free", "dairy-free": "dairy-free",
          "dairy free": "dairy-free", "kosher": "kosher", "halal": "halal", "keto": "keto"}
_NOT_EATEN = {"meat": "no meat", "red meat": "no red meat", "pork": "no pork", "beef": "no beef",
              "fish": "no fish", "meat or fish": "no meat or fish", "animal products": "no animal products",
              "dairy": "no dairy"}
# Allergen as said -> the canonical subject (singular), so "peanuts" and "a peanut allergy" share a slot.
_ALLERGENS = {
    "peanuts": "peanut", "peanut": "peanut", "nuts": "nut", "nut": "nut", "tree nuts": "tree nut",
    "tree nut": "tree nut", "shellfish": "shellfish", "fish": "fish", "prawns": "prawn", "prawn": "prawn",
    "shrimp": "shrimp", "crab": "crab", "lobster": "lobster", "eggs": "egg", "egg": "egg", "milk": "milk",
    "dairy": "dairy", "lactose": "lactose", "gluten": "gluten", "wheat": "wheat", "soy": "soy", "soya": "soy",
    "sesame": "sesame", "mustard": "mustard", "celery": "celery", "strawberries": "strawberry",
    "strawberry": "strawberry", "kiwi": "kiwi", "kiwis": "kiwi", "cats": "cat", "cat": "cat", "dogs": "dog",
    "dog": "dog", "horses": "horse", "bees": "bee", "bee stings": "bee", "wasps": "wasp", "wasp stings": "wasp",
    "pollen": "pollen", "grass": "grass", "dust": "dust", "dust mites": "dust mite", "mould": "mould",
    "mold": "mould", "latex": "latex", "penicillin": "penicillin", "aspirin": "aspirin", "ibuprofen": "ibuprofen",
    "codeine": "codeine", "antibiotics": "antibiotic", "nickel": "nickel", "sulphites": "sulphite",
    "sulfites": "sulphite", "feathers": "feather", "avocado": "avocado", "mango": "mango", "coconut": "coconut",
    "almonds": "almond", "cashews": "cashew", "walnuts": "walnut", "hazelnuts": "hazelnut", "oats": "oat",
}
_FOOD_ALLERGENS = ("gluten", "wheat", "dairy", "lactose", "nuts", "peanuts", "tree nuts", "shellfish", "eggs",
                   "soy", "soya", "sesame", "milk")
_INTOLERANCES = ("lactose", "gluten", "wheat", "dairy", "fructose", "histamine")


def _allergen_list(allergens: tuple[str, ...]) -> str:
    one = rf"(?:{_alternation(allergens)})"
    return rf"(?P<allergens>{one}(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+){one})*)(?![\w-])"


# Routine verbs: bare form -> (gerund, third person).
_HABITS: dict[str, tuple[str, str]] = {
    "run": ("running", "runs"), "jog": ("jogging", "jogs"), "swim": ("swimming", "swims"),
    "walk": ("walking", "walks"), "cycle": ("cycling", "cycles"), "bike": ("biking", "bikes"),
    "ride": ("riding", "rides"), "meditate": ("meditating", "meditates"), "pray": ("praying", "prays"),
    "read": ("reading", "reads"), "journal": ("journaling", "journals"), "cook": ("cooking", "cooks"),
    "bake": ("baking", "bakes"), "train": ("training", "trains"), "lift": ("lifting", "lifts"),
    "climb": ("climbing", "climbs"), "paint": ("painting", "paints"), "draw": ("drawing", "draws"),
    "write": ("writing", "writes"), "practise": ("practising", "practises"),
    "practice": ("practicing", "practices"), "study": ("studying", "studies"),
    "stretch": ("stretching", "stretches"), "dance": ("dancing", "dances"), "sing": ("singing", "sings"),
    "hike": ("hiking", "hikes"), "surf": ("surfing", "surfs"), "skate": ("skating", "skates"),
    "knit": ("knitting", "knits"), "garden": ("gardening", "gardens"),
    "volunteer": ("volunteering", "volunteers"), "call": ("calling", "calls"), "ring": ("ringing", "rings"),
    "phone": ("phoning", "phones"), "visit": ("visiting", "visits"), "see": ("seeing", "sees"),
    "text": ("texting", "texts"), "facetime": ("facetiming", "facetimes"), "nap": ("napping", "naps"),
    "shop": ("shopping", "shops"), "clean": ("cleaning", "cleans"), "watch": ("watching", "watches"),
    "work out": ("working out", "works out"), "wake up": ("waking up", "wakes up"),
    "get up": ("getting up", "gets up"), "go to bed": ("going to bed", "goes to bed"),
    "go to sleep": ("going to sleep", "goes to sleep"), "play": ("playing", "plays"), "go": ("going", "goes"),
    "do": ("doing", "does"), "have": ("having", "has"), "eat": ("eating", "eats"), "drink": ("drinking", "drinks"),
}
_OBJECT_HABITS = frozenset({"do", "have", "eat", "drink"})  # the subject is what is done or had: "yoga"
_DAY_NAMES = "|".join(_DAYS)
_DAY_WORD = (rf"(?:day|morning|afternoon|evening|night|week|weekend|weekday|month|year|lunchtime|summer|winter|"
             rf"spring|autumn|{_DAY_NAMES})")
_FREQUENCY = (
    rf"(?:every|each)\s+(?:single\s+|other\s+)?{_DAY_WORD}(?:\s+(?:morning|afternoon|evening|night))?"
    rf"|on\s+(?:(?:{_DAY_NAMES})s|weekends|weekdays|the\s+weekends?|"
    rf"(?:{_DAY_NAMES})\s+(?:mornings|afternoons|evenings|nights))"
    r"|(?:once|twice|three\s+times|four\s+times|five\s+times|a\s+few\s+times|several\s+times|\d+\s+times|"
    r"a\s+couple\s+(?:of\s+)?times)\s+(?:a|per|every)\s+(?:day|week|month|year|night)"
    r"|daily|nightly|weekly|most\s+(?:days|mornings|evenings|nights|weekends|weekdays)"
    r"|before\s+(?:bed|work|school|breakfast)|after\s+(?:work|school|dinner|lunch|breakfast)|at\s+weekends"
)
_TIME_DETAIL = (r"at\s+(?:\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm)?|dawn|dusk|noon|midnight|lunch|lunchtime|night)"
                r"|for\s+(?:about\s+|around\s+)?(?:an?|half\s+an|\w+)\s+(?:minutes?|hours?|mins?|hrs?|miles|km)")
_TIMING = rf"(?P<when>(?:(?:{_TIME_DETAIL})\s+)*(?:{_FREQUENCY})(?:\s+(?:{_FREQUENCY}|{_TIME_DETAIL}))*)\b"

# -- guards -----------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bProf\.)\s+|\n+")
_CLAUSE_BOUNDARY = re.compile(
    r"[,;:()\u2013\u2014]|\s-\s|\b(?:but|and|so|because|cos|cause|though|although|while|whereas|plus|then|or)\b",
    re.I,
)
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
# A question tag that asks to confirm what came before it ("I'm a teacher, right?"): the statement is a guess.
_CONFIRMING_TAG = re.compile(
    r"\W*(?:right|correct|remember|no|yes|yeah|huh|eh|innit|isn't\s+it|aren't\s+I|am\s+I|don't\s+I|didn't\s+I|"
    r"wasn't\s+it|true|yes\s+or\s+no)\W*$",
    re.I,
)
# After a like or dislike: it is a passing mood ("I hate my job today").
_PASSING = re.compile(r"\s+(?:today|tonight|rn|right\s+now|this\s+(?:morning|afternoon|evening|week))\b", re.I)
_AFTER = 200  # how far past a match the checks on what follows it look, so a long turn stays linear
_QUOTED = re.compile(r'"[^"]*"?')  # someone's words, or the user quoting: not a statement about the user
# Words later in the sentence that take the statement back ("I'm a nurse, well, I was until last year").
_UNDONE = re.compile(
    r"\b(?:any\s?more|no\s+longer|until\s+(?:last|recently|a\s+few|a\s+couple)|used\s+to\s+be|"
    r"well,?\s+(?:I\s+)?(?:was|used\s+to))\b",
    re.I,
)
# After "I live in X" or "I moved to X": X is not where the user lives now if they moved on, or moved as a child.
_NOT_HOME_NOW = re.compile(
    r"[^.!?]*?\b(?:then|later|after\s+that)\b[^.!?]*?\b(?:to|in)\s+(?-i:[A-Z])"
    r"|\s*(?:[\w']+\s+){0,4}?(?:when\s+I\s+was|as\s+a\s+(?:kid|child|teenager|teen|baby))\b",
    re.I,
)
# After "I moved to X": the move was for a while ("for six months").
_ONLY_A_WHILE = re.compile(
    r"\s*(?:[\w']+\s+){0,3}?for\s+(?:a|an|one|two|three|four|five|six|\d+|a\s+few|a\s+couple\s+of|the)\s+"
    r"(?:weeks?|months?|summer|winter|semester|term|year)\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^\W*(?:(?:so|and|but|oh|ok|okay|hey|wait|like|um|hmm|also)\W+)?(?:do|does|did|are|is|was|were|have|has|had|"
    r"can|could|would|will|should|shall|may|might|am|what|what's|when|when's|where|where's|who|who's|whom|whose|"
    r"why|how|how's|which|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|haven't|you|ever)\b",
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
# People are not likes or dislikes ("I love my mum" is affection, "I hate my boss" a mood), but they do take part
# in habits ("I call my mum every Sunday").
_PEOPLE_WORDS = frozenset({
    "family", "friend", "friends", "kids", "children", "boys", "girls", "neighbour", "neighbours", "neighbor",
    "neighbors", "colleague", "colleagues", "coworker", "coworkers", "co-workers", "classmates", "flatmates",
    "roommates", "housemates", "team", "teacher", "teachers", "cousin", "cousins", "aunt", "uncle", "niece",
    "nephew",
    *(w for role in (*_PEOPLE, *_GROUPS) for w in role.split()),
    *(f"{w}s" for role in _PEOPLE for w in role.split()), "nieces", "nephews", "grandkids", "grandchildren",
    "babies",
})
_MAX_THING_WORDS = 6
_THING = r"(?P<thing>[^.,!?;:()]{1,60}?)"


# -- building facts ---------------------------------------------------------------------------------------------

Build = Callable[[re.Match[str], str], list[ExtractedFact]]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: Build
    negative: bool = False  # the statement is itself negative ("I don't like"): "anymore" does not undo it
    # A general reading ("I like X", "I do X every day") yields to the specific rules before it: "I like my coffee
    # black" is how the coffee is taken, not a liking for "my coffee black".
    general: bool = False


def _fact(subject: str, relation: Relation, value: str) -> ExtractedFact:
    """The fact, with the server's sentence for it (``prompts.wording.fact_sentence``): never the user's words."""
    subject, value = " ".join(subject.lower().split()), " ".join(value.split())
    return ExtractedFact(subject=subject, relation=relation, value=value,
                         sentence=fact_sentence(subject, relation, value))


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


_CONNECTORS = frozenset({"of", "upon", "de", "da", "do", "del", "la", "le", "du", "am", "sur", "en", "for", "and",
                         "&", "the"})


def _proper(text: str | None) -> str | None:
    """A captured name or place without trailing words that are not part of it ("Lisbon Monday")."""
    if not text:
        return None
    tokens = text.split()
    while len(tokens) > 1 and (tokens[-1].lower().rstrip(".") in _NOT_PART_OF_NAMES
                               or tokens[-1].lower() in _CONNECTORS):
        tokens.pop()
    if not tokens or tokens[0].lower() in _NOT_NAMES:
        return None
    return " ".join(tokens)


def _person(match: re.Match[str], group: str = "name") -> str | None:
    """The name in ``group``, or None when it is a stop word or reads as a verb with its object."""
    name = _proper(match.group(group))
    if name is None:
        return None
    if name.endswith("'s"):
        name = name[:-2]
    if re.fullmatch(r"(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof)\.?", name):
        return None
    following = _words(match.string[match.end(group):match.end(group) + 20])
    if following and following[0] in _OBJECT_WORDS:
        return None
    return name


def _role_of(match: re.Match[str]) -> str:
    return " ".join(f"{match.group('keep') or ''} {match.group('role')}".lower().split())


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


def _third_person(verb: str) -> str:
    verb = " ".join(verb.lower().split())
    if verb in ("can't stand", "cannot stand", "can't bear", "cannot bear"):
        return verb.replace("cannot", "can't")
    return _HABITS[verb][1] if verb in _HABITS else f"{verb}s"


def _date(said: str) -> str:
    """The date as said, without commas, with its month capitalised: "23rd april" -> "23rd April"."""
    words = said.replace(",", " ").split()
    return " ".join(_MONTHS.get(w.lower().rstrip("."), w) for w in words)


# Each builder gets the match and the whole (normalised) turn, and returns its facts, or [] to reject the match.


def _user_name(match: re.Match[str], text: str) -> list[ExtractedFact]:
    name = _person(match)
    return [_fact("user", "name", name)] if name else []


def _role_name(match: re.Match[str], text: str) -> list[ExtractedFact]:
    name = _person(match)
    if name is None:
        return []
    role = _role_of(match)
    return [_fact(f"user's {role}", "name", name)]


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
    if org and not (said_job and _words(said_job)[-1] in _STUDYING):
        facts.append(_fact("user", "works_at", org))
    return facts


def _diet(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact("user", "diet", _DIETS[" ".join(match.group("diet").lower().split())])]


def _not_eaten(match: re.Match[str], text: str) -> list[ExtractedFact]:
    food = " ".join(match.group("food").lower().split())
    return [_fact("user", "diet", _NOT_EATEN[food])]


def _allergens(match: re.Match[str]) -> list[str]:
    """The canonical allergen of each one listed ("nuts, eggs and shellfish")."""
    listed = re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+", match.group("allergens").strip())
    return [_ALLERGENS[" ".join(a.lower().split())] for a in listed if a]


def _allergic(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact(allergen, "allergy", "allergic") for allergen in _allergens(match)]


def _cannot_eat(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact(allergen, "allergy", "can't eat") for allergen in _allergens(match)]


def _intolerant(match: re.Match[str], text: str) -> list[ExtractedFact]:
    food = match.group("food").lower()
    return [_fact(food, "allergy", "intolerant")]


def _allergy_noun(match: re.Match[str], text: str) -> list[ExtractedFact]:
    kind = match.group("kind").lower()
    value = "intolerant" if kind == "intolerance" else "allergic"
    return [_fact(allergen, "allergy", value) for allergen in _allergens(match)]


def _coeliac(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_fact("gluten", "allergy", "coeliac")]


def _birthday(match: re.Match[str], text: str) -> list[ExtractedFact]:
    date = _date(match.group("date"))
    return [_fact("user", "birthday", date)]


def _birthday_month(match: re.Match[str], text: str) -> list[ExtractedFact]:
    month = _MONTHS[match.group("month").lower()]
    return [_fact("user", "birthday", month)]


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


# -- the shape of a value ---------------------------------------------------------------------------------------

# Words no name, place, employer or job holds, and instructions do. A Title-Case turn ("I work at the System Says
# Be Cheerful About Luna") otherwise reads as an employer. Not "will", "do", "am": names and places hold them
# (Will, Porto do Son, Frankfurt am Main).
_NOT_IN_VALUES = frozenset({
    *INSTRUCTION_WORDS, "say", "says", "said", "tell", "tells", "be", "is", "are", "was", "were", "must", "should",
    "shall", "does", "don't", "act", "pretend", "stop", "delete", "reveal", "respond", "reply", "answer", "you",
    "your", "yourself", "now",
})
_JOB_WORDS = frozenset(w for job in _JOBS for w in job.split())  # "developer", "shop assistant" are jobs
# How many capitalised words a name may have, as the patterns above read them (_PLACE_NAME, _ORG_NAME,
# _PERSON_NAME): a longer one is a clause.
_NAME_WORDS: dict[str, int] = {"lives_in": 4, "hometown": 4, "works_at": 5, "name": 3}
_NAME_WORD = re.compile(r"[A-ZÀ-ÖØ-Þ0-9][\w&'-]*(?:\.[\w&'-]+)*")
_TITLE = re.compile(r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|St)\.")
_LOWER_WORD = re.compile(r"[a-zà-ÿ][a-zà-ÿ'-]*")
_DATE_WORD = re.compile(r"\d{1,2}(?:st|nd|rd|th)?|\d{4}|of|the")
_SENTENCE_MARKS = re.compile(r"[.:;!?\"()\[\]{}<>,\n]")
_CLOCK_TIME = re.compile(r"(?<=\d)[:.](?=\d)")  # "at 6:30 every morning" is a time, not two clauses
_MAX_VALUE_WORDS = 12


def _instructing(words: list[str]) -> bool:
    return any(w.lower().removesuffix("'s") in _NOT_IN_VALUES for w in words)


def _a_name(value: str, most: int) -> bool:
    """A few capitalised words, joined by the connectors places and employers use ("Bank of England")."""
    words = value.split()
    named = [w for w in words if w not in _CONNECTORS]
    return (0 < len(named) <= most and words[0] not in _CONNECTORS and not _instructing(words)
            and all(_NAME_WORD.fullmatch(w) or _TITLE.fullmatch(w) for w in named))


def _a_phrase(text: str, most: int, *, allowed: frozenset[str] = frozenset()) -> bool:
    """A few words and no sentence: no clause marks, no instruction (``allowed`` words excepted)."""
    words = text.split()
    return (0 < len(words) <= most and not _SENTENCE_MARKS.search(_CLOCK_TIME.sub("", text))
            and not _instructing([w for w in words if w.lower() not in allowed]))


def _someone(subject: str) -> bool:
    """"user" or "user's <role>": the subject of a fact about the user or a person or animal in their life."""
    if subject == "user":
        return True
    role = subject.removeprefix("user's ").split()
    return (subject.startswith("user's ") and 0 < len(role) <= 3 and all(_LOWER_WORD.fullmatch(w) for w in role)
            and not _instructing(role))


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


# -- the rules, most specific first -----------------------------------------------------------------------------

_I = r"\bI"
_IM = r"\bI(?:'m|\s+am)"
_I_HAVE = r"\b(?:I|we)(?:'ve\s+got|\s+have\s+got|\s+have|\s+got|'ve)"
_MY = r"\b(?:my|our)\s+"
_JOB_END = (r"(?=\s*(?:[.,!?;:)\-]|$)|\s+(?:at|for|with|in|on|and|but|so|who|which|now|by|from|too|myself|lol|"
            r"haha|btw|tbh|though|because|since|these|this|during|here|there|currently|full[\s-]time|"
            r"part[\s-]time|nights|days|x+)\b)")
_AT_ORG = rf"(?:\s+(?:at|for|with)\s+{_org()})?"
_ALLERGY_ADV = (r"(?:(?:very|severely|really|deathly|super|mildly|slightly|quite|badly|highly|seriously|so|"
                r"extremely|actually|also|just)\s+)*")
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

# -- extraction -------------------------------------------------------------------------------------------------

_NORMALISE = (
    (re.compile("[\u2019\u2018\u02bc`]"), "'"),
    (re.compile("[\u201c\u201d\u201e]"), '"'),
    (re.compile(r"\bi\b"), "I"),  # chat's lower-case "i", "i'm"
    (re.compile(r"\bim\b", re.I), "I'm"),
    (re.compile(r"\bive\b", re.I), "I've"),
    (re.compile(r"\bdont\b", re.I), "don't"),
    (re.compile(r"\bcant\b", re.I), "can't"),
)


def _normalise(text: str) -> str:
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    return text


def _answerable_end(sentence: str) -> int:
    """How much of ``sentence`` states rather than asks: all of it, none of a question, and of "I live in Dublin,
    did I not say?" the part before the last comma."""
    if not sentence.rstrip(" )\"'!").endswith("?"):
        return len(sentence)
    if _QUESTION_START.match(sentence):
        return 0
    cut = max(sentence.rfind(","), sentence.rfind(" - "), sentence.rfind(";"), 0)
    return 0 if _CONFIRMING_TAG.match(sentence[cut:]) else cut


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
