"""Resolution: a later memory of the same episode that takes an earlier worry or grievance out of tone force.

"The scan came back clear", "she apologised and we made up", "got the job after all": after such a message the
character should stop treating the earlier anxiety or anger as live. No model: a conservative rule list plus the
memory's own valence, and (with a model-backed classifier) the model's own reading of the session.

A memory *reads as resolution* when
- a cue from ``CUES`` matches one of its sentences, not negated, hedged or asked before the cue ("didn't come
  back clear", "I hope it comes back clear", "has she apologised?" do not count), or a model-backed classifier
  said so (``resolution`` other than ``"none"`` on its classification); and
- its own valence (before any episode carry) is above ``WriteParams.resolution_min_valence``: "she apologised
  but I'm still furious" is anger, not resolution.

It *resolves* an earlier memory that is in tone force (a complete emotional trace at or above the tone bar, not
resolved already) of a register in ``WriteParams.resolvable_registers`` (anxiety and anger by default: a worry is
about something ahead and a grievance about someone; both can be settled by news. Grief is never resolved this
way: a year later the character is still not cheerful about the dead dog. Sadness and shame are left out too:
the classifier gives sadness to losses it does not call grief, and an outcome does not undo a shame), said
before it, and linked to it by
- an anchor: one of the earlier memory's anchors named in the resolving message, or the other way round, that
  is specific (not a word most of the user's memories contain, like a name every turn starts with); or
- meaning: cosine similarity of the two memories' vectors at or above ``WriteParams.resolution_min_similarity``;
- or the model: the classifier read the session and named the earlier memory as the one resolved.

A link resolves the rest of the earlier memory's episode too: the other memories of its session in a resolvable
register that name nothing it does not ("I'm so scared it's cancer" beside "Still no news on the biopsy"), since
a tone rule speaks for an episode and the classifier may split one worry into anxiety and anger. A memory of the
same session about something else ("my boss yelled at me again") keeps its tone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.domain.text import anchor_key, matched_anchors, terms
from engine.domain.vocabulary import RESOLUTION_KINDS

_RESULT_NOUN = r"(?:results?|scans?|tests?|biopsy|bloods?|blood ?work|mri|x-?rays?|mammogram|lump|tumou?r|screening)"
_FINE = r"(?:all )?(?:clear|fine|normal|negative|benign|ok|okay|good|clean)"
CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
    ("test_result", rf"\bcame back {_FINE}\b"),
    ("test_result", rf"\b{_RESULT_NOUN}\b[^.!?]{{0,40}}?\b(?:is|are|was|were|came out|looks?|looked)\s+{_FINE}\b"),
    ("test_result", r"\b(?:got|get|given) the all[- ]clear\b|\ball[- ]clear\b"),
    ("test_result", r"\b(?:cancer|tumou?r)[- ]free\b|\bit'?s benign\b|\bnot cancer(?:ous)?\b"),
    ("false_alarm", r"\bfalse alarm\b|\bnothing to worry about after all\b"),
    ("apology", r"\b(?:apologi[sz]ed|said (?:he|she|they) (?:was|were) sorry|said sorry|came to say sorry)\b"),
    ("reconciliation", r"\bwe(?:'ve| have)? (?:made up|patched (?:things|it) up|talked it (?:out|through)|"
                       r"worked it out|sorted it out|cleared the air)\b"),
    ("reconciliation", r"\bmade up with\b|\bwe(?:'re| are) (?:good|fine|okay|ok|friends) again\b|"
                       r"\bforgave (?:him|her|them)\b"),
    ("good_outcome", r"\b(?:got|landed) the (?:job|offer|position|place|visa|loan|apartment|flat|house|promotion)\b"
                     r"[^.!?]{0,30}\bafter all\b"),
    ("good_outcome", r"\b(?:came|come) through after all\b|\bafter all,? (?:i|we|they|she|he) got\b"),
    ("good_outcome", r"\b(?:passed|aced) (?:my|the|her|his) [a-z ]{0,20}(?:exam|test|interview|assessment)s?\b"),
    ("good_outcome", r"\b(?:it|everything|things|all) (?:worked out|turned out (?:fine|ok|okay|well|great|good))\b"),
    ("problem_solved", r"\b(?:it'?s|it is|that'?s|that is|all|everything'?s|everything is) (?:all )?(?:good|sorted|"
                       r"fine|okay|ok) now\b|\ball sorted\b|\bit'?s (?:all )?sorted\b|\ball good now\b"),
    ("problem_solved", r"\b(?:problem|issue)(?:'s| is| was| has been| got) (?:been )?"
                       r"(?:resolved|fixed|solved|sorted)\b"),
    ("found_safe", r"\b(?:found|got) (?:him|her|them) back\b|\b(?:is|came|got) (?:home|back) safe\b|"
                   r"\bsafe and sound\b"),
    ("no_longer_worried", r"\bno longer (?:worried|anxious|scared|afraid|angry|mad|upset)\b|"
                          r"\bnot (?:worried|anxious|scared|afraid|angry|mad|upset) any ?more\b"),
    ("relief", r"\b(?:such|what) a relief\b|\bso relieved\b|\b(?:i'?m|i am|we'?re|we are) (?:so |really )?relieved\b"),
))

# Words before a cue (in its clause) that make it not a report of resolution: negation, hope, condition, doubt.
_GUARD = re.compile(
    r"\b(?:not|never|no|didn'?t|don'?t|doesn'?t|hasn'?t|haven'?t|hadn'?t|isn'?t|aren'?t|wasn'?t|weren'?t|won'?t|"
    r"wouldn'?t|can'?t|couldn'?t|if|unless|hope|hoping|hopefully|wish|pray|praying|fingers crossed|until|till|"
    r"once|when|whether|might|may|maybe|could|would|should|waiting|wait|yet|still)\b|n't\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE = re.compile(r"[,;:]|\b(?:but|though|although|however)\b", re.IGNORECASE)


def resolution_kind(text: str) -> str | None:
    """The kind of resolution a message reports by the rule list (a key of ``RESOLUTION_KINDS``), or None.

    Conservative: a cue counts only in a sentence that is not a question, and only when nothing in its clause
    before it negates, hedges or conditions it.
    """
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for kind, pattern in CUES:
            for match in pattern.finditer(sentence):
                before = sentence[: match.start()]
                clause = _CLAUSE.split(before)[-1] if before else ""
                if not _GUARD.search(clause):
                    return kind
    return None


def reads_as_resolution(text: str, valence: float, *, min_valence: float, model_kind: str | None = None) -> str:
    """The cue a memory is recorded with when it reads as resolution ("" when it does not): the model's kind
    when it named one, else the rule list's; in both cases its own valence must be above ``min_valence``."""
    if valence <= min_valence:
        return ""
    kind = model_kind if model_kind and model_kind in RESOLUTION_KINDS else resolution_kind(text)
    if kind is None:
        return ""
    source = "model" if model_kind and model_kind in RESOLUTION_KINDS else "rule"
    return f"{RESOLUTION_KINDS[kind]} ({source})"


@dataclass(frozen=True)
class Resolver:
    """A new memory that reads as resolution."""

    memory_id: str
    text: str
    created_at: datetime
    anchors: tuple[str, ...]
    vector: NDArray[np.float32] | None
    cue: str
    named: frozenset[str] = frozenset()
    """Earlier memories of its own session that the model said it resolves."""


@dataclass(frozen=True)
class InForce:
    """An earlier memory whose tone is in force and of a register that can be resolved."""

    memory_id: str
    text: str
    created_at: datetime
    session_id: str
    register: str
    anchors: tuple[str, ...]
    vector: NDArray[np.float32] | None


@dataclass(frozen=True)
class Link:
    memory_id: str  # the memory resolved
    resolved_by: str
    register: str
    at: datetime  # when the resolving memory was said
    cue: str
    link: str  # why these two belong together: "shared anchor", "similar meaning (0.71)", "named by the model"


def common_terms(texts: Sequence[str], *, share: float = 0.3, minimum: int = 20) -> frozenset[str]:
    """Index terms (``engine.domain.text.terms``) found in more than ``share`` of ``texts`` (the user's memories) once
    there are at least ``minimum`` of them: a name most memories carry (the user's own, a speaker label such as
    "Caroline:") links nothing. A young partition has none: its few memories are all about the same few things."""
    if len(texts) < minimum:
        return frozenset()
    counts: dict[str, int] = {}
    for text in texts:
        for term in set(terms(text)):
            counts[term] = counts.get(term, 0) + 1
    return frozenset(term for term, n in counts.items() if n > share * len(texts))


def _specific(anchors: Sequence[str], common: frozenset[str]) -> tuple[str, ...]:
    """The anchors that name something besides common terms."""
    return tuple(a for a in anchors if (key := anchor_key(a)) and not set(key) <= common)


def _cosine(a: NDArray[np.float32] | None, b: NDArray[np.float32] | None) -> float | None:
    if a is None or b is None or np.isnan(a).any() or np.isnan(b).any():
        return None
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return None if norm == 0.0 else float(np.dot(a, b)) / norm


def link_resolutions(resolvers: Sequence[Resolver], earlier: Sequence[InForce], *, min_similarity: float,
                     common: frozenset[str] = frozenset()) -> list[Link]:
    """Which earlier memories the resolvers resolve, each by the first resolver (in time) that links to it, with
    the rest of its episode (see the module's doc). ``common`` are terms too widespread to link (``common_terms``)."""
    by_session: dict[str, list[InForce]] = {}
    for memory in earlier:
        by_session.setdefault(memory.session_id, []).append(memory)
    found: dict[str, Link] = {}
    for resolver in sorted(resolvers, key=lambda r: (r.created_at, r.memory_id)):
        resolver_terms = frozenset(terms(resolver.text))
        resolver_anchors = _specific(resolver.anchors, common)
        for memory in earlier:
            if memory.created_at >= resolver.created_at or memory.memory_id in found:
                continue
            why = ""
            if memory.memory_id in resolver.named:
                why = "named by the model"
            elif matched_anchors(resolver_terms, _specific(memory.anchors, common)) or (
                    resolver_anchors and matched_anchors(frozenset(terms(memory.text)), resolver_anchors)):
                why = "shared anchor"
            else:
                similarity = _cosine(resolver.vector, memory.vector)
                if similarity is not None and similarity >= min_similarity:
                    why = f"similar meaning ({similarity:.2f})"
            if not why:
                continue
            about = {anchor_key(a) for a in _specific(memory.anchors, common)}
            for member in by_session[memory.session_id]:
                if member.memory_id in found or member.created_at >= resolver.created_at:
                    continue
                if member.memory_id != memory.memory_id and not (
                        {anchor_key(a) for a in _specific(member.anchors, common)} <= about):
                    continue  # the same conversation, but about something else
                found[member.memory_id] = Link(
                    memory_id=member.memory_id, resolved_by=resolver.memory_id, register=member.register,
                    at=resolver.created_at, cue=resolver.cue,
                    link=why if member.memory_id == memory.memory_id else f"same episode ({why})",
                )
    return sorted(found.values(), key=lambda link: (link.at, link.memory_id))
