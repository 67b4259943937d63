"""Durable facts in what the user says, extracted without a model, as (subject, relation, value) triples.

Each fact also carries one self-contained sentence about the user ('The user lives in "Lisbon".'): the write-time
pass keeps the sentences in the trace and the lexical index learns their words, so "where I live" finds "I moved
to Lisbon" even though the user never said "live". The sentence is the server's template for the triple
(``prompts.wording.fact_sentence``, the same for facts written over the API), never the user's wording. The triple
names a slot, ``(subject, relation)``, so a later fact on the same slot can supersede an earlier one (see
``engine.domain.models.ExtractedFact``).

Precision matters more than recall: a wrong fact is recalled as if the user had said it, a missing one is only a
missed chance. So every pattern is anchored on a first-person statement ("I live in", "I'm a nurse", "my dog's
name is"), values that cannot be checked by shape come from small lexicons (jobs, allergens, foods, instruments),
and a match is dropped when its clause is hedged or reported ("if", "might", "I think", "she said"), when the
sentence undoes it ("anymore", "no longer", "jk") or when the sentence is a question. Names and places must be
capitalised, since chat is full of lower-case words that only look like them. Last, every value must have its
relation's shape (``well_formed``): a Title-Case instruction ("I work at the System Says Be Cheerful About Luna")
is capitalised too, but it is not a name.

v2 (issue #14) adds, on the same principles:

- **Changes.** The past tense matches only for a change said as news ("I started at Kestrel Media", "I've joined
  Orbit Foods", "we broke up", "I graduated", "I moved in with Sam"), and not when the sentence dates it long ago
  ("years ago", "in 2015") or tells it as the reason for something else ("since I lost my job..."). A change
  fills the same slot as the value it replaces, so it supersedes it.
- **Endings.** A negation of a current state ends its slot with a value of its own ("I don't work at Orbit Foods
  any more" -> works_at "no longer Orbit Foods", read as 'The user no longer works at "Orbit Foods".'). A turn
  that also says the new value keeps only that (``extract``); an ending that names a value its slot no longer
  holds is not written (``engine.facts.ends_another``).
- **Preferences.** How the user has food and drink ("preference"), tastes in them ("taste", by a food lexicon;
  other likes stay "opinion"), favourites, pets and children, hobbies, and what they are busy with these days.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from engine.domain.models import ExtractedFact
from engine.domain.vocabulary import (
    ALLERGY_KINDS,
    ENDED,
    GRADUATED_FROM,
    INSTRUCTION_WORDS,
    OPINION_STANCES,
    RELATIONSHIP_STATUSES,
    TASTE_STANCES,
    Relation,
    ended_value,
    fact_sentence,
)

"""The relations the extractor (and the write-time prompt) may use, each with its subject and value conventions."""

# System-extracted facts on these relations land active; the others land provisional, waiting for review.
# A first-person present-tense statement of who the user is (where they live and come from, who with, their work
# and school, their relationship, names, diet, allergies, birthday, pets and children) is stated deliberately,
# rarely sarcastic and stable for months, and the patterns for it are the narrowest; when it is wrong the user
# corrects it in the same words, and the correction supersedes. An allergy is also a safety matter: a companion
# that forgets one is worse than one that recalls a stale one. So are tastes in food and drink and how the user
# has them ("I take my coffee with oat milk", "I can't stand coriander", "my favourite film is Alien"): they are
# stable for years, rarely a mood, and what a companion is asked about when the user orders ("what should I
# get?"), so they are current facts too. Opinions of anything else and routines are the opposite: moods pass for
# opinions ("I hate running" after one bad run), jokes and exaggeration are common, and both drift, so they wait
# for corroboration.
AUTO_ACTIVE_RELATIONS: frozenset[str] = frozenset(
    {"lives_in", "hometown", "works_at", "occupation", "name", "diet", "allergy", "birthday", "studies_at",
     "relationship", "lives_with", "preference", "taste", "favourite", "has", "hobby", "died"}
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
_END = (r"(?=\s*(?:[.,!?;:)\]]|$)|\s+[-\u2013\u2014]+(?:\s|$)|"
        r"\s+(?:and\s+(?:I|I'm|it|it's|they|he|she|we|you|then|also)|but|because|cause|cos|since|so|though|"
        r"although|while|when|whenever|if|unless|which|who|where|that's|lol|haha|lmao|tbh|"
        r"btw|honestly|especially|like|these\s+days|nowadays|lately|at\s+the\s+moment|right\s+now|now|anymore|"
        r"any\s+more|too|as\s+well|either|more\s+than|more|than|a\s+lot|so\s+much|very\s+much|to\s+bits|"
        r"with\s+a\s+passion|weirdly|actually|really|by\s+the\s+way|for|ever|all\s+the\s+time|in\s+general|"
        r"though|to\s+be\s+honest|x+|today|tonight|rn|this\s+(?:morning|afternoon|evening|week)|is|are|was|were|"
        r"has|have|had|'cause|cuz)\b)")

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

# Foods and drinks, as the head of a liked thing ("Italian food", "oat milk lattes"): a like of one is a taste
# (active), a like of anything else an opinion (provisional). Singular; plurals are read by ``_singular``.
_FOODS = frozenset("""
    food foods cuisine dish meal snack dessert sweet treat breakfast brunch lunch dinner supper takeaway
    coffee tea latte cappuccino espresso americano macchiato mocha chai matcha cocoa smoothie juice lemonade soda
    cola coke milk milkshake beer ale lager cider wine prosecco champagne whisky whiskey gin vodka rum
    tequila cocktail margarita mojito martini booze alcohol caffeine kombucha
    bread toast bagel croissant pastry pastries cake cupcake muffin biscuit cookie brownie pie tart donut doughnut
    pancake waffle cereal porridge oatmeal granola yoghurt yogurt cheese butter egg omelette
    pizza pasta spaghetti lasagne lasagna noodle ramen pho sushi sashimi curry burrito taco nacho enchilada
    quesadilla kebab falafel hummus burger hotdog sandwich wrap salad soup stew chili chilli risotto paella
    steak chicken beef pork lamb bacon sausage ham turkey duck fish salmon tuna cod prawn shrimp seafood lobster
    crab oyster mussel squid calamari tofu tempeh seitan bean lentil chickpea rice potato chip fries crisp
    vegetable veg veggie broccoli spinach kale carrot pea sprout cabbage cauliflower mushroom onion garlic tomato
    pepper chilli olive avocado cucumber lettuce aubergine eggplant courgette zucchini beetroot coriander
    cilantro parsley basil mint ginger cinnamon
    fruit apple banana orange lemon lime strawberry raspberry blueberry berry cherry grape mango pineapple peach
    pear plum melon watermelon kiwi coconut fig
    chocolate candy sweets ice-cream gelato sorbet custard jelly jam honey marmalade caramel fudge vanilla
    sauce ketchup mayo mayonnaise mustard gravy pesto salsa marmite vegemite peanut nut almond cashew walnut
    flavour flavor spice dumpling gyoza dim-sum bao samosa pakora dal naan roti biryani tikka korma jalfrezi
    vindaloo bhaji pad-thai stir-fry barbecue bbq roast fry-up mousse pudding sundae cheesecake crumble trifle
    tiramisu baklava churro macaron scone flapjack truffle frosting icing fudge popcorn pretzel nugget wing
""".split())
_FOODS_MULTI = frozenset({"flat white", "flat whites", "hot chocolate", "ice cream", "pad thai", "dim sum",
                          "cold brew", "iced tea", "bubble tea", "soft drinks", "fizzy drinks", "energy drinks"})
# Words before a food that make the phrase a dish of a cuisine ("Thai food", "Mexican"), all read as food.
_CUISINES = frozenset("""
    italian french spanish greek turkish lebanese indian thai chinese japanese korean vietnamese mexican
    american british ethiopian moroccan caribbean jamaican persian malaysian indonesian filipino portuguese
    german polish russian brazilian peruvian nepalese sri-lankan middle-eastern spicy vegan vegetarian street
""".split())
# Drinks (and a few foods) the user says how they have: "I take my coffee with oat milk", "I like my steak rare".
_HOW_TAKEN = ("coffee", "coffees", "tea", "teas", "latte", "lattes", "flat white", "flat whites", "cappuccino",
              "americano", "espresso", "chai", "hot chocolate", "cuppa", "brew", "steak", "steaks", "eggs",
              "burger", "burgers", "toast", "porridge", "curry", "curries", "whisky", "whiskey", "gin", "martini",
              "martinis", "pizza", "tacos")
_STYLES = (r"black|white|strong|extra\s+strong|weak|milky|sweet|unsweetened|decaf|decaffeinated|iced|extra\s+hot|"
           r"hot|plain|neat|on\s+the\s+rocks|dry|dirty|no\s+sugar|sugar-free|no\s+milk|medium[\s-]rare|medium|"
           r"rare|blue|well[\s-]done|scrambled|poached|fried|boiled|runny|sunny\s+side\s+up|over\s+easy|spicy|"
           r"extra\s+spicy|mild|very\s+spicy|burnt|crispy|with(?:out)?\s+[\w\s'-]+?")
# What goes in a drink: "I always put oat milk in my coffee".
_ADDITIVES = (r"(?:(?:a\s+(?:splash|dash|drop)\s+of|a\s+bit\s+of|a\s+little|some|extra|lots\s+of|a\s+lot\s+of)\s+)?"
              r"(?:(?:oat|almond|soy|soya|skimmed|skim|whole|semi-skimmed|coconut|cashew|rice|lactose-free|"
              r"cold|hot|steamed|frothy)\s+)?(?:milk|cream|sugar|sugars|sweetener|honey|lemon|cinnamon|syrup|"
              r"vanilla|caramel|an\s+extra\s+shot|a\s+shot\s+of\s+[\w\s]+?)|(?:one|two|three|a|\d)\s+sugars?|"
              r"(?:one|two|a|\d)\s+sweeteners?")
# The kinds of thing a favourite is of ("my favourite film"): anything else ("my favourite part", "my favourite
# thing") is an event or a clause, not a taste.
_FAVOURITE_KINDS = frozenset("""
    food foods dish meal snack dessert drink coffee tea beer wine cocktail cake biscuit cookie pizza topping
    sandwich ice-cream flavour flavor cuisine restaurant café cafe bar pub takeaway breakfast lunch dinner fruit
    vegetable cheese chocolate sweet crisps sauce soup
    film movie show series programme sitcom anime cartoon documentary book novel author writer poet poem
    band singer artist musician rapper composer song album track genre musical play opera game sport team club
    player athlete colour color season animal bird flower plant place city country holiday destination spot
    number actor actress character hobby subject podcast painter painting director superhero villain car brand
    shop store app youtuber breed day month quote instrument dance exercise workout activity pastime console
""".split())
_FAVOURITE = r"(?:fav(?:ou?rite|e|ourite|orite)?|favou?rite)"
_PET_KINDS = {"dog": "dog", "dogs": "dog", "puppy": "dog", "puppies": "dog", "pup": "dog", "cat": "cat",
              "cats": "cat", "kitten": "cat", "kittens": "cat", "hamster": "hamster", "hamsters": "hamster",
              "rabbit": "rabbit", "rabbits": "rabbit", "bunny": "rabbit", "bunnies": "rabbit",
              "guinea pig": "guinea pig", "guinea pigs": "guinea pig", "parrot": "parrot", "parrots": "parrot",
              "budgie": "budgie", "budgies": "budgie", "horse": "horse", "horses": "horse", "pony": "horse",
              "ponies": "horse", "tortoise": "tortoise", "tortoises": "tortoise", "turtle": "turtle",
              "turtles": "turtle", "snake": "snake", "snakes": "snake", "lizard": "lizard", "lizards": "lizard",
              "gecko": "gecko", "geckos": "gecko", "ferret": "ferret", "ferrets": "ferret", "goldfish": "fish",
              "fish": "fish", "chickens": "chicken", "hens": "chicken", "bird": "bird", "birds": "bird"}
_CHILD_KINDS = {"kid": "child", "kids": "child", "child": "child", "children": "child", "son": "son",
                "sons": "son", "daughter": "daughter", "daughters": "daughter", "boys": "child", "girls": "child",
                "grandkids": "grandchild", "grandchildren": "grandchild", "grandchild": "grandchild",
                "grandson": "grandchild", "grandsons": "grandchild", "granddaughter": "grandchild",
                "granddaughters": "grandchild", "stepson": "stepchild", "stepdaughter": "stepchild",
                "stepkids": "stepchild"}
_COUNTS = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})"
# The last word of an employer that says it is one ("Orbit Foods", "Kestrel Media"), for the verbs that take
# other objects too ("I joined Orbit Foods" but "I joined Reddit"; "I left Kestrel Media" but "I left London").
_COMPANY_WORDS = frozenset("""
    foods food media studios studio labs lab ltd limited inc llc plc group bank agency solutions consulting
    consultants partners capital systems technologies technology tech software health healthcare hospital
    clinic council logistics industries corporation corp co company insurance energy motors airlines airways
    pharma pharmaceuticals analytics digital design designs games entertainment records publishing press news
    financial finance services retail foundation trust charity nhs associates ventures holdings networks
    telecom robotics security construction engineering architects law legal accounting marketing brewery
    bakery café cafe restaurant hotel hotels supermarket stores store shop boutique gallery museum library
    theatre theater school academy university college nursery surgery pharmacy
""".split())
# A school, college or university by the last word of its name ("Leeds University", "Oakfield High").
_SCHOOL_WORDS = frozenset({"university", "uni", "college", "school", "academy", "institute", "polytechnic",
                           "conservatory", "conservatoire", "high", "seminary", "sixth", "form"})
# Words elsewhere in the turn that say an employer is the topic ("I joined Acme, the team is lovely").
_JOB_CONTEXT = re.compile(
    r"\b(?:job|jobs|role|position|career|employer|office|boss|manager|colleagues?|co-?workers?|team|hired|offer|"
    r"interview|contract|salary|promotion|promoted|first\s+day|first\s+week|notice|resign(?:ed|ing)?|quit|"
    r"laid\s+off|redundan\w*|work|working|shift|shifts)\b",
    re.I,
)
# After (or just before) a change ("I left X", "we broke up", "I graduated"): it happened long ago, so it says
# nothing of now.
_LONG_AGO = re.compile(
    r"[^.!?]{0,60}?\b(?:(?:\d+|a\s+few|a\s+couple\s+of|several|many|some|two|three|four|five|six|seven|eight|nine|"
    r"ten|twenty)\s+years\s+(?:ago|back|before)|in\s+(?:19|20)\d\d|when\s+I\s+was|back\s+in|back\s+then|at\s+the\s+"
    r"time|as\s+a\s+(?:kid|child|teen|teenager|student)|the\s+first\s+time|(?:last|that)\s+time|once\s+before|"
    r"years\s+ago)\b",
    re.I,
)
_LONG_AGO_BEFORE = re.compile(r"\b(?:years\s+ago|in\s+(?:19|20)\d\d|back\s+then|back\s+in\s+the\s+day|once|(?:ever\s+)?"
                              r"since|after|'cause|cause|because|cos|cuz)\W*$", re.I)
"""Before a change: it is dated long ago, or told as the reason for what came after ("since I lost my job")."""
_BACKSTORY = re.compile(r"\b(?:(?:ever\s+)?since|after|because|'cause|cause|cos|cuz)\s*$", re.I)

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
    r"sure|what|how(?!\s+much)|(?<!that's\s)(?<!that\sis\s)(?<!which\sis\s)(?<!this\sis\s)why|who|where|lying|kidding|joking|"
    r"as\s+if)\b|n't\b|'d\b",
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
# After a statement, words that say it was a joke ("I'm a millionaire, jk"); the negative rules check it too.
_JOKING = (r"\b(?:jk|j/k|just\s+(?:kidding|joking)|only\s+joking|(?<!not\s)kidding|(?<!not\s)joking|"
           r"not\s+really|lol\s+no|haha\s+no|as\s+if)\b|/s\b")
_JOKE = re.compile(_JOKING, re.I)
# Words later in the sentence that take the statement back ("I'm a nurse, well, I was until last year").
_UNDONE = re.compile(
    r"\b(?:any\s?more|no\s+longer|until\s+(?:last|recently|a\s+few|a\s+couple)|used\s+to\s+be|"
    r"well,?\s+(?:I\s+)?(?:was|used\s+to))\b|" + _JOKING,
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
    "chatting", "out", "up", "off", "in", "both", "either", "every", "each", "'cause", "cause", "cos", "also",
})
# A liked thing that is only one of these says too little to be a taste ("I like playing for fun").
_VAGUE_THINGS = frozenset({"playing", "doing", "having", "being", "going", "getting", "making", "trying", "working",
                           "it all", "everything", "stuff", "things"})
_PRONOUNS = frozenset({
    "you", "your", "yours", "u", "ur", "him", "he", "his", "she", "her", "hers", "they", "them", "it", "this",
    "that", "these", "those", "me", "myself", "yourself", "himself", "herself", "themselves", "our", "us", "ya",
    "their", "theirs", "ours", "mine",
    "yah", "y'all", "ye", "thee",
})
# The same for a habit's object, which may start with a preposition ("cycle to work", "go out").
_NOT_HABITS_FIRST = frozenset({
    "it", "it's", "its", "that", "this", "these", "those", "there", "here", "something", "anything", "nothing",
    "everything", "someone", "anyone", "everyone", "so", "too", "much", "more", "less", "a", "an", "and", "or",
    "but", "then", "also",
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
    # A change said in the past tense ("I started at", "we broke up", "I graduated"): true of now only when it is
    # news, so it is dropped when the sentence dates it long ago ("I left Boots years ago", "in 2015").
    change: bool = False


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
    elif (words[0] in _NOT_THINGS_FIRST and not (words[0] in ("a", "an") and len(words) > 1)) or any(
            w in _PEOPLE_WORDS for w in words):
        return None  # "a good crossword" is a thing, "a" alone is not
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
_OWN_BUSINESS = ("business", "biz", "company", "studio", "store", "shop", "bakery", "café", "cafe", "restaurant",
                 "salon", "practice", "firm", "agency", "brand", "label", "clinic", "gym", "startup", "start-up",
                 "consultancy", "boutique", "bar", "pub", "farm", "gallery", "nursery", "school", "charity",
                 "dance studio", "yoga studio", "clothing store", "online store", "online shop", "food truck")


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


def _own_business(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I run my own dance studio", "I started my own online clothing store": the user works for themselves."""
    kind = " ".join(match.group("business").lower().split())
    return [_fact("user", "works_at", f"their own {kind}")]


# -- v2 builders: changes, endings, school, home, relationships, food and drink, favourites, pets and children --


def _singular(word: str) -> str:
    word = word.lower()
    for plural, single in (("ies", "y"), ("oes", "o"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss")):
        if word.endswith(plural) and len(word) > len(plural) + 2:
            return word[: -len(plural)] + single
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _food_like(words: list[str]) -> bool:
    """Whether a phrase names foods or drinks: the head (last word) of every part of it ("coconut milk and
    chocolate", "Italian food", "spicy Thai curries") is a food, or it is a cuisine ("Thai", "Mexican")."""
    parts = [p.split() for p in re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", " ".join(words)) if p.split()]
    return bool(parts) and all(_singular(p[-1]) in _FOODS or p[-1] in _FOODS or p[-1].removesuffix("s") in _FOODS
                               or " ".join(p[-2:]) in _FOODS_MULTI or (len(p) == 1 and p[0] in _CUISINES)
                               for p in parts)


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


def _ended(relation: Relation, what: str) -> ExtractedFact:
    return _fact("user", relation, f"{ENDED} {what}")


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


def _not_diet(match: re.Match[str], text: str) -> list[ExtractedFact]:
    return [_ended("diet", _DIETS[" ".join(match.group("diet").lower().split())])]


def _item(phrase: str, *, food: bool) -> str | None:
    """A thing ordered or favoured, as said: a few words, no pronoun or clause; ``food`` asks for a food or drink."""
    phrase = " ".join(phrase.split()).strip(" '\"")
    words = _words(phrase)
    if not words or len(words) > _MAX_THING_WORDS or any(w in _NOT_THINGS_ANYWHERE - {"i"} for w in words):
        return None
    if words[0] in {"probably", "maybe", "either", "between", "hard", "too", "so", "definitely", "whatever",
                    "anything", "something", "one", "this", "that", "these", "those", "all", "any"}:
        return None
    if food and not _food_like([w for w in words if w not in ("a", "an", "the")]):
        return None
    return phrase


def _how_taken(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I take my coffee with oat milk"; "I take it black" only when the turn names exactly one of coffee and tea."""
    drink = match.group("drink")
    if drink is None:
        named = {d for d in ("coffee", "tea") if re.search(rf"\b{d}\b", text, re.I)}
        if len(named) != 1:
            return []
        (drink,) = named
    drink, style = " ".join(drink.lower().split()), " ".join(match.group("style").split())
    if drink in ("cuppa", "brew"):
        drink = "tea"
    drink = {"coffees": "coffee", "teas": "tea", "lattes": "latte", "flat whites": "flat white", "steaks": "steak",
             "burgers": "burger", "curries": "curry", "martinis": "martini"}.get(drink, drink)
    if any(w in _PRONOUNS or w in _NOT_THINGS_ANYWHERE for w in _words(style)):
        return []
    return [_fact(drink, "preference", style.lower())]


def _additive(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I always put oat milk in my coffee" -> coffee, "with oat milk"."""
    add = " ".join(match.group("add").lower().split())
    return [_fact(match.group("drink").lower(), "preference", f"with {add}")]


_ORDER_SUBJECTS = {"order": "usual order", "drink": "usual drink", "coffee": "usual coffee order"}


def _usual_order(match: re.Match[str], text: str, *, food: bool) -> list[ExtractedFact]:
    """"My go-to order is a flat white"; "I always order the katsu curry" (``food``: only a food or drink)."""
    groups = match.groupdict()
    noun = (groups.get("noun") or "order").lower()
    subject = _ORDER_SUBJECTS[noun]
    if noun == "order" and (groups.get("kind") or "").lower() == "coffee":
        subject = "usual coffee order"
    item = _item(match.group("item"), food=food)
    return [_fact(subject, "preference", item)] if item else []


def _meal(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I usually have porridge for breakfast"."""
    item = _item(match.group("item"), food=True)
    return [_fact(match.group("meal").lower(), "preference", item)] if item else []


def _kind_of_person(match: re.Match[str], text: str) -> list[ExtractedFact]:
    """"I'm a tea person" (prefers tea), "I'm a coffee lover"."""
    stance = {"person": "prefers", "lover": "loves", "addict": "loves", "fanatic": "loves", "snob": "is a fan of",
              "drinker": "likes"}[match.group("kind").lower()]
    return [_fact(match.group("food").lower(), "taste", stance)]


def _doesnt_drink(match: re.Match[str], text: str) -> list[ExtractedFact]:
    what = " ".join((match.groupdict().get("what") or "alcohol").lower().split())
    return [_fact({"booze": "alcohol", "drink": "alcohol"}.get(what, what), "taste", "doesn't drink")]


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
_NAME_WORDS: dict[str, int] = {"lives_in": 4, "hometown": 4, "works_at": 5, "name": 3, "studies_at": 5}
# The values that are the server's own words ("left their job"): nothing of the user's text to check.
_CLOSED_VALUES = frozenset({("works_at", "left their job"), ("studies_at", "graduated"), ("occupation", "retired"),
                            ("lives_with", "alone")})
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


def _companion_shaped(value: str) -> bool:
    """Who someone lives with: "alone", "their <role>", or a few names ("Sam and Alex")."""
    words = value.split()
    if value == "alone":
        return True
    if words[0] == "their":
        return 1 < len(words) <= 4 and all(_LOWER_WORD.fullmatch(w) for w in words[1:]) and not _instructing(words)
    return _a_name(" ".join(w for w in words if w != "and"), 4) and words[-1] != "and"


def well_formed(fact: ExtractedFact) -> bool:
    """Whether a fact has its relation's shape: an employer, a home or a name is a few capitalised words, a job a
    few lower-case ones, a date a date, a stance, a status or a kind of allergy one of the known ones, and nothing
    holds an instruction or a clause. A value that ends its slot ("no longer Orbit Foods", "graduated from Leeds
    University") has the shape of what ended. The extractor keeps only such facts, and a model's (``engine.facts``)
    that is not waits for review: either way the value is the user's text, and it is about to be recalled as a
    fact."""
    subject, relation, value = fact.subject, fact.relation, fact.value
    ended = ended_value(relation, value)
    if ended is not None:
        value = ended[1]
    elif (relation, value) in _CLOSED_VALUES:
        return _someone(subject)
    if relation == "works_at" and value.startswith("their own "):
        words = value.split()[2:]
        return (_someone(subject) and 0 < len(words) <= 4 and all(_LOWER_WORD.fullmatch(w) for w in words)
                and not _instructing(words))
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
    if relation == "taste":
        return value.lower() in TASTE_STANCES and _a_phrase(subject, _MAX_THING_WORDS)
    if relation == "relationship":
        return _someone(subject) and value.lower() in RELATIONSHIP_STATUSES
    if relation == "lives_with":
        return _someone(subject) and _a_phrase(value, 8) and _companion_shaped(value)
    if relation == "favourite":
        return _a_phrase(subject, 4) and _a_phrase(value, _MAX_THING_WORDS + 2)
    if relation == "hobby":
        return value in ("plays", "does") and _a_phrase(subject, 4)
    if relation == "has":
        words = value.lower().split()
        return (_a_phrase(subject, 2) and 0 < len(words) <= 4 and _a_phrase(value, 4)
                and all(_LOWER_WORD.fullmatch(w) or w.isdigit() for w in words))
    if relation == "activity":
        return _a_phrase(subject, _MAX_THING_WORDS + 2) and _a_phrase(value, 4)
    if relation == "died":
        return _someone(subject) and (value == "died" or _a_name(value, _NAME_WORDS["name"]))
    if relation in ("routine", "preference"):
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


def _favourite_of(*, before: bool) -> Build:
    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        return _favourite(match, text, before=before)

    return build


def _order_of(*, food: bool) -> Build:
    def build(match: re.Match[str], text: str) -> list[ExtractedFact]:
        return _usual_order(match, text, food=food)

    return build


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
          rf"{_ITEM_END}", _order_of(food=False)),
    _rule(rf"{_I}\s+{_HABIT_ADV}(?:have|eat)\s+(?P<item>[^.,!?;:()]{{1,40}}?)\s+for\s+(?P<meal>breakfast|lunch|"
          r"dinner)\b(?!\s+(?:tonight|today|tomorrow|this|later|again|now)\b)", _meal),
    _rule(rf"{_I}\s+(?:always|usually|normally|generally|typically|tend\s+to)\s+(?:order|get|go\s+for|choose|pick|"
          rf"have)\s+(?P<item>[^.,!?;:()]{{1,50}}?){_ITEM_END}", _order_of(food=True), general=True),
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
          rf"{_TITLE_END}", _favourite_of(before=False)),
    _rule(rf"(?:^|(?<=[,;:]\s)|\b(?:and|but|so|plus)\s+)\W*(?P<value>(?:the\s+)?{_CAP}(?:\s+(?:(?:of|the|and|&|in|"
          rf"on|a)\s+)?{_CAP}){{0,5}}|[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?:is|are|'s|has\s+always\s+been|will\s+always\s+"
          rf"be)\s+(?:still\s+|definitely\s+|easily\s+)?my\s+(?:(?:all[\s-]time|absolute|very|personal|top|ultimate)"
          rf"\s+)?{_FAVOURITE}\s+(?P<kind>(?:[a-z][\w-]*\s+){{0,2}}?[a-z][\w-]*){_END}", _favourite_of(before=True)),
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


def _long_ago(sentence: str, match: re.Match[str], boundaries: list[int]) -> bool:
    """Whether the clause of a change dates it long ago ("I left Boots years ago", "back in 2015 I quit"), or tells
    it as the reason for what came after ("since I lost my job, ...", "'cause I lost my job")."""
    if _LONG_AGO.match(sentence, match.end(), match.end() + _AFTER):
        return True
    if _BACKSTORY.search(sentence, max(0, match.start() - 20), match.start()):
        return True
    clause_start = boundaries[bisect.bisect_right(boundaries, match.start()) - 1]
    return _LONG_AGO_BEFORE.search(sentence[clause_start:match.start()]) is not None


# A sentence that drops its "I" ("Love experimenting with spices.", "Lost my job yesterday.") is read with it.
_SUBJECTLESS = re.compile(
    r"^(?=(?:(?:really|totally|absolutely|just|also|so|honestly|still|seriously|literally)\s+)*(?:love|adore|enjoy|"
    r"lost\s+my\s+job|quit\s+my\s+job|started\s+(?:at|a\s+new|my\s+new|working)|got\s+a\s+(?:new\s+)?job|"
    r"moved\s+in\s+with|graduated)\b(?!\s+(?:is|was|are|can|will|'s|means|hurts|wins|you|ya|u|it|that|this|them|"
    r"him|her|to|and|or|&|of|for|in|from|yourself)\b))",
    re.I,
)


def _sentence_facts(sentence: str, text: str) -> Iterator[ExtractedFact]:
    if _SUBJECTLESS.match(sentence):
        sentence = "I " + sentence[:1].lower() + sentence[1:]
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
            if rule.negative and _JOKE.search(sentence, match.end(), match.end() + _AFTER):
                continue
            if rule.change and _long_ago(sentence, match, boundaries):
                continue
            facts = [fact for fact in rule.build(match, text) if well_formed(fact)]
            if facts:
                read.append((match.start(), match.end()))
                yield from facts


_PRONOUN_NAME = re.compile(rf"\b(?:his|her|its)\s+name(?:'s|\s+is)\s+{_name()}", re.I)
_MY_ROLE = re.compile(rf"{_MY}{_role()}\b|\bI(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|recently\s+)?(?:got|have|"
                      rf"adopted|rescued|bought)\s+(?:a|an|this|our|my)\s+(?:(?:new|little|cute|tiny|baby|rescue|"
                      rf"lovely|gorgeous|beautiful|adorable)\s+)*(?P<pet>{_alternation(_PETS)})\b", re.I)


def _pronoun_names(text: str) -> list[ExtractedFact]:
    """"I got a puppy two weeks ago! Her name's Coco.": the name of the one person or animal of the user's the turn
    named before it. Two of them ("my dog and my cat... her name is") and it is not said which: nothing."""
    facts: list[ExtractedFact] = []
    for said in _PRONOUN_NAME.finditer(text):
        sentence_start = max(text.rfind(mark, 0, said.start()) for mark in (".", "!", "?", "\n"))
        sentence = text[sentence_start + 1:]
        if _hedged(text, said.start(), [sentence_start + 1]) or "?" in sentence.split(".")[0]:
            continue
        roles = {_role_of(m) if m.group("role") else m.group("pet").lower() for m in _MY_ROLE.finditer(text, 0,
                                                                                                          said.start())}
        name = _person(said)
        if len(roles) == 1 and name is not None:
            fact = _fact(f"user's {roles.pop()}", "name", name)
            if well_formed(fact):
                facts.append(fact)
    return facts


_ENDING_VALUES = frozenset({"left their job", "graduated", "broken up"})


def ends_slot(fact: ExtractedFact) -> bool:
    """Whether a fact ends its slot rather than fills it: "no longer Orbit Foods", "left their job", "graduated"."""
    return ended_value(fact.relation, fact.value) is not None or fact.value.lower() in _ENDING_VALUES


def extract(text: str) -> tuple[ExtractedFact, ...]:
    """The atomic facts the user states in one turn, in order, without duplicates. A turn that ends a slot and
    fills it ("I left Brightline and joined Orbit Foods") keeps only the new value: it is what is current."""
    text = _normalise(text)
    found: dict[tuple[str, str, str], ExtractedFact] = {}
    for sentence in _SENTENCE_END.split(text):
        for fact in _sentence_facts(sentence.strip(), text):
            found.setdefault((fact.subject, fact.relation, fact.value.casefold()), fact)
    for fact in _pronoun_names(text):
        found.setdefault((fact.subject, fact.relation, fact.value.casefold()), fact)
    filled = {(f.subject, f.relation) for f in found.values() if not ends_slot(f)}
    return tuple(f for f in found.values() if not (ends_slot(f) and (f.subject, f.relation) in filled))


def extract_facts(text: str) -> tuple[str, ...]:
    """The sentences of ``extract``: what the trace keeps and the lexical index learns."""
    return tuple(dict.fromkeys(fact.sentence for fact in extract(text)))
