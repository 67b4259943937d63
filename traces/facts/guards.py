"""What keeps a match from being a statement about the user: sentences and clauses, hedged, reported, joked,
undone or asked (a question), and changes dated long ago; and the normalising of chat's spelling before any of
it is read."""

from __future__ import annotations

import bisect
import re

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

# -- reading a sentence -----------------------------------------------------------------------------------------

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
