"""The text shapes and lexicons the fact patterns are written from: names, places, employers and dates as they
are typed, and the small word lists (roles, jobs, diets, allergens, routines, foods, kinds of pets) for the values
that cannot be checked by shape."""

from __future__ import annotations

import re

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
