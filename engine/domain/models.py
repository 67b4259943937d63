"""Domain models: what the engine stores and what recall answers.

Models that cross a boundary (requests, stored records, recall results) forbid unknown fields, so a typo in a
caller's payload is an error that names the field rather than a silently ignored key. Numbers carry their unit
or range in the name or the field description.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field

REGISTERS: tuple[str, ...] = (
    "grief",
    "sadness",
    "anxiety",
    "anger",
    "shame",
    "joy",
    "affection",
    "pride",
    "curiosity",
    "neutral",
)
"""The emotional register vocabulary of ../shared/transcripts/FORMAT.md, in a fixed order (classifier heads use it)."""

Register = Literal["grief", "sadness", "anxiety", "anger", "shame", "joy", "affection", "pride", "curiosity", "neutral"]
Role = Literal["user", "character"]


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must carry a time zone (e.g. 2025-03-01T18:00:00Z)")
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00:00-05:00 has no UTC form; a plain OverflowError would be a 500
        raise ValueError("timestamp is out of range once converted to UTC (years 1-9999)") from None


AwareDatetime = Annotated[datetime, AfterValidator(_aware)]
IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
IDENTIFIER_MAX_CHARS = 200
Identifier = Annotated[str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS, pattern=IDENTIFIER_PATTERN)]
NAMESPACE_MAX_CHARS = 64
"""Room for the namespace the API puts before the ids it scopes: an organisation (1-63 characters) and ':'."""
ScopedIdentifier = Annotated[
    str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS + NAMESPACE_MAX_CHARS, pattern=IDENTIFIER_PATTERN)
]
"""An id as stored: a caller's ``Identifier``, possibly namespaced. Stored turns are validated again when read
back, so a limit of the caller's length would make a 200-character id stored as ``acme:<id>`` unreadable."""


# "register" is the domain's word (FORMAT.md); it only shadows ABCMeta.register, which nothing here calls.
warnings.filterwarnings("ignore", message='Field name "register"', category=UserWarning)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(Frozen):
    """One message of a conversation, as a character runtime reports it."""

    turn_id: ScopedIdentifier
    session_id: ScopedIdentifier
    character_id: ScopedIdentifier
    user_id: Identifier
    role: Role
    text: str = Field(min_length=1, max_length=20_000)
    timestamp: AwareDatetime


class Partition(Frozen):
    """Memory is partitioned by (character, user): one user's memories with one character.

    The character canon and the organisation's shared memory live in partitions of their own, whose user (and,
    for shared, character) is a reserved id starting with ``~``, which no caller's id can
    (see ``engine.domain.scopes``).
    """

    character_id: str = Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS + NAMESPACE_MAX_CHARS)
    user_id: str = Field(min_length=1, max_length=220)


Scope = Literal["user", "canon", "shared"]
"""Memory levels, narrowest first: one user with one character; the character's canon; the organisation's."""

RecordKind = Literal["turn", "fact", "record"]
"""turn: a user turn. fact: an atomic fact. record: a durable document (a character's canon lore), whole."""
Status = Literal["active", "provisional", "revoked", "archived"]
"""active: in recall. provisional: waiting for review, out of recall. revoked: superseded or rejected, out of
recall for good. archived: decayed into the cold archive, out of everyday recall, restorable."""

Source = Literal["user_stated", "inferred", "model_generated", "director"]
"""Where a record came from; its strength's source trust follows (user-stated > inferred > model-generated)."""


class ExtractedFact(Frozen):
    """An atomic fact as the write-time pass finds it: a subject, a relation and one self-contained sentence.

    ``(subject, relation)`` names a single-valued slot: a later fact on the same slot (in the same scope and for
    the same user) with different content supersedes this one. Multi-valued relations put the thing itself in
    the subject ("jazz" / "opinion": "The user loves jazz.") so that two likes never supersede each other.
    """

    subject: str = Field(min_length=1, max_length=120, description='normalised, lower case: "user", "user\'s dog"')
    relation: str = Field(min_length=1, max_length=60, pattern=r"^[a-z_]+$")
    value: str = Field(min_length=1, max_length=200, description='the object as said: "Lisbon"')
    sentence: str = Field(min_length=1, max_length=500, description='"The user lives in Lisbon."')


class TraceStatus(StrEnum):
    PENDING = "pending"
    COMPLETE = "complete"


class MemoryKind(StrEnum):
    EMOTIONAL = "emotional"
    FACTUAL = "factual"


class FactInfo(Frozen):
    """What makes a memory an atomic fact: its slot, its content hash and where it came from."""

    subject: str
    relation: str
    value: str
    content_hash: str = Field(description="sha256 of the normalised sentence: identical content dedups")
    source: Source
    provenance: tuple[str, ...] = Field(default=(), description="the memories (or session) it was distilled from")


class Memory(Frozen):
    """The unit of recall: one user turn, with the character turn it answered as context.

    A user turn is the unit because the user's own words are what they echo later ("Luna", "the park"); the
    character's replies are generated text that would pollute anchors and lexical matches. The character turn
    just before it is kept as ``context`` so a short reply ("Thanks. I just miss her so much.") still reads
    sensibly when it is put in front of the character.
    """

    memory_id: str
    turn_id: str
    session_id: str
    character_id: str
    user_id: str
    text: str
    context: str = ""
    preceding: str = Field(
        default="", max_length=20_000,
        description=(
            "the session's turn right before this one, whoever said it: its words join the memory's lexical "
            "document, so an answer (\"A corgi puppy!\") is found by its question's words (\"what kind of dog?\")"
        ),
    )
    created_at: AwareDatetime
    kind: RecordKind = "turn"
    scope: Scope = "user"
    fact: FactInfo | None = Field(default=None, description="set for an atomic fact (kind 'fact')")

    @property
    def partition(self) -> Partition:
        return Partition(character_id=self.character_id, user_id=self.user_id)

    @property
    def slot(self) -> tuple[str, str] | None:
        """A fact's (subject, relation): the key supersession works on, within the fact's partition."""
        return None if self.fact is None else (self.fact.subject, self.fact.relation)


class StrengthSignals(Frozen):
    """The stored strength vector: kept whole, collapsed to a scalar only at ranking time (scoring.strength)."""

    retrievals: int = Field(default=0, ge=0, description="times recall returned the memory")
    mentions: int = Field(default=1, ge=0, description="times the same content was written (a fact coming back)")
    query_kinds: tuple[str, ...] = Field(default=(), description="distinct kinds of query that reached it (capped)")
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    last_validated: AwareDatetime | None = Field(default=None, description="decay runs from here; None: created")
    last_retrieved: AwareDatetime | None = None
    source: Source = "user_stated"


class MemoryState(Frozen):
    """A memory's lifecycle, apart from its content (which never changes): status, supersession, pins, strength."""

    memory_id: str
    status: Status = "active"
    prior_status: Status | None = Field(default=None, description="what an archived memory is restored to")
    superseded_by: str | None = Field(default=None, description="the fact that replaced this one (or its fact)")
    stale: bool = Field(default=False, description="a turn whose fact was superseded: it never outranks the fact")
    pinned: bool = False
    signals: StrengthSignals = StrengthSignals()
    changed_at: AwareDatetime | None = None


class Trace(Frozen):
    """What the write-time pass wrote beside a memory: how the moment felt, and what it was about."""

    memory_id: str
    status: TraceStatus
    register: Register = "neutral"
    valence: float = Field(default=0.0, ge=-1.0, le=1.0, description="-1 (very negative) .. 1 (very positive)")
    intensity: float = Field(default=0.0, ge=0.0, le=1.0, description="0 (flat) .. 1 (overwhelming)")
    engagement: float = Field(default=0.0, ge=0.0, le=1.0, description="0 (disengaged) .. 1 (fully engaged)")
    anchors: tuple[str, ...] = ()
    facts: tuple[str, ...] = Field(
        default=(), description='durable facts the user stated, one sentence each ("The user lives in Lisbon.")'
    )
    extracted: tuple[ExtractedFact, ...] = Field(
        default=(), description="facts a model-backed classifier found, with their slots (written as facts)"
    )
    kind: MemoryKind = MemoryKind.FACTUAL
    written_at: AwareDatetime
    classifier: str = Field(default="", description="name@version of what classified the memory")
    attempts: int = Field(default=0, ge=0, description="write-time attempts so far (pending traces are retried)")
    last_error: str = ""
    resolution_cue: str = Field(
        default="", max_length=200,
        description='why the memory reads as a resolution ("the result came back fine (rule)"); empty when not',
    )
    resolves: tuple[str, ...] = Field(
        default=(), description="earlier memories whose anxiety or anger this one resolved, as the write-time pass "
                                "found them (the ledger's resolutions say whether each is still in force)",
    )


class Resolution(Frozen):
    """An earlier memory's tone taken out of force by a later memory of the same episode (``traces.resolution``).

    Holds ids, a register, times and labels from a fixed vocabulary, never what was said."""

    # Output only: reading one back (a logged recall, the typed client) ignores the computed ``note``.
    model_config = ConfigDict(extra="ignore", frozen=True)

    memory_id: str = Field(description="the memory resolved: no longer toned, still recallable")
    resolved_by: str = Field(description="the memory that resolved it")
    # A Field, not a bare annotation: pydantic would take the inherited ABCMeta.register as the default.
    register: Register = Field(description="the register of the memory resolved (anxiety or anger)")
    at: AwareDatetime = Field(description="when the resolving memory was said; in force for recalls from then on")
    cue: str = Field(description='why the resolving memory reads as resolution ("an apology (rule)")')
    link: str = Field(description='why the two belong together ("shared anchor", "similar meaning (0.71)")')
    recorded_at: AwareDatetime
    undone_at: AwareDatetime | None = Field(default=None, description="a director undid it: the tone is back")
    undone_by: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def note(self) -> str:
        """The explanation recall shows: "resolved by <memory id> on <date>: <cue>"."""
        undone = f" (undone {self.undone_at.date().isoformat()})" if self.undone_at else ""
        return f"resolved by {self.resolved_by} on {self.at.date().isoformat()}: {self.cue}{undone}"


class Leg(StrEnum):
    VECTOR = "vector"
    LEXICAL = "lexical"
    SUBSTRING = "substring"


class Candidate(Frozen):
    """A stage-one hit: a memory id with its fused relevance and the legs that found it."""

    memory_id: str
    relevance: float = Field(ge=0.0, le=1.0)
    vector_score: float | None = Field(default=None, description="cosine similarity, when the vector leg found it")
    lexical_score: float | None = Field(default=None, description="BM25 normalised to 0..1, when lexical found it")
    legs: tuple[Leg, ...]
    tier: Tier = Field(default="standard", description="how relevant, on the calibrated relevance")
    calibrated_relevance: float | None = Field(
        default=None, ge=0.0, le=1.0, description="the probability, calibrated on the development set, that it fits"
    )
    relevance_lead: float | None = Field(
        default=None, description="its fused relevance minus the median of the query's best candidates"
    )


class WindowTurn(Frozen):
    """One line of the conversation before the message: who said it and what."""

    role: Role
    text: str = Field(min_length=1, max_length=20_000)


WINDOW_MAX_TURNS = 50
Tier = Literal["high", "standard", "low"]


class RecallQuery(Frozen):
    character_id: Identifier
    user_id: Identifier
    message: str = Field(min_length=1, max_length=20_000)
    window: tuple[WindowTurn, ...] | None = Field(
        default=None, max_length=WINDOW_MAX_TURNS,
        description=(
            "the conversation's recent lines before the message, oldest first, as the runtime has them. Left out: "
            "the engine reads the last turns of session_id from its store (none without a session). An empty list: "
            "no window. The profile's retrieval.window_turns says how many of the newest count"
        ),
    )
    session_id: Identifier | None = Field(
        default=None, description="the caller's current session; its turns are left out unless include_current_session"
    )
    at: AwareDatetime | None = Field(default=None, description="the turn's time; now when left out")
    limit: int = Field(default=6, ge=1, le=40)
    include_current_session: bool = False


class ScoreComponents(Frozen):
    """Every factor of a stage-two score, so any ranking can be explained."""

    relevance: float
    salience: float = Field(description="trace intensity decayed by age (emotional) or the flat factual weight")
    salience_weight: float = Field(description="the multiplier salience contributes: base + (1 - base) * salience")
    anchor_boost: float = Field(description="1 when no anchor matched, the profile's boost when one did")
    strength: float = 1.0
    scope_weight: float = 1.0
    age_days: float
    half_life_days: float
    score: float


class RecalledMemory(Frozen):
    memory_id: str
    text: str
    context: str
    session_id: str
    created_at: datetime
    legs: tuple[Leg, ...]
    trace: Trace | None
    matched_anchors: tuple[str, ...]
    window_anchors: tuple[str, ...] = Field(
        default=(), description="its anchors the conversation window named but the message did not (a lower boost)"
    )
    tier: Tier = Field(
        default="standard",
        description=(
            "how relevant stage one found it, on the fused score: high (mention it freely), standard, or low (a weak "
            "match: the best there was; mention it only if the user leads there)"
        ),
    )
    calibrated_relevance: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description=(
            "the probability that this is a memory a good companion would bring up, from the fused relevance and "
            "how far it stands above the query's other matches; the tier is read from it"
        ),
    )
    relevance_lead: float | None = Field(
        default=None,
        description="how far its fused relevance stands above the median of the query's best matches (stage one)",
    )
    kind: RecordKind = "turn"
    scope: Scope = Field(default="user", description="the memory level it came from: user, canon or shared")
    stale: bool = Field(default=False, description="it carried a fact that has since been superseded")
    components: ScoreComponents
    resolution: Resolution | None = Field(
        default=None, description="a later memory resolved its feeling: recalled as a memory, no tone rule"
    )


class ToneConstraint(Frozen):
    """A rule for the character's tone, added to the system message."""

    register: Register = Field(description="the register of the episode the rule comes from")
    anchors: tuple[str, ...]
    instruction: str
    source_memory_ids: tuple[str, ...]
    standing: bool = Field(description="a standing rule: in force whether or not its memories were recalled")
    intensity: float
    valence: float
    anniversary_years: int | None = Field(
        default=None, ge=1,
        description=(
            "a standing rule near the anniversary of its moment: how many years ago it was (the instruction says "
            "so); none outside the profile's tone.anniversary_window_days, and never on a rule that is not standing"
        ),
    )


RecallMode = Literal["hybrid", "lexical", "substring"]


class RecallTrace(Frozen):
    """How recall answered: which legs ran, how many candidates each found, where the floors cut, timings."""

    mode: RecallMode
    legs: tuple[Leg, ...]
    vector_candidates: int
    lexical_candidates: int
    fused_candidates: int
    dropped_below_floor: int
    excluded_current_session: int
    window_turns: int = Field(default=0, description="lines of the conversation window the query read")
    window_source: Literal["none", "passed", "stored"] = Field(
        default="none", description="where the window came from: the request, or the session's stored turns"
    )
    vector_threshold: float | None = Field(
        default=None, description="the cosine a vector hit needed on this query (relative when every match is weak)"
    )
    fused_floor: float | None = Field(default=None, description="the fused relevance a hit needed on this query")
    standing_rule_memories: int
    resolved_tone_memories: int = Field(
        default=0, description="memories that would carry a tone rule but were resolved by a later memory"
    )
    timings_ms: dict[str, float]
    profile_version: int
    notes: tuple[str, ...] = ()
    context: ContextTrace | None = None


class ContextTrace(Frozen):
    """What the character was shown on one turn, and why: enough to answer "what did it see" later."""

    tokenizer: str = Field(description="what counted the tokens")
    budget_tokens: int = Field(description="the whole budget: Path A first, Path B fills the rest")
    prefix_tokens: int
    tone_tokens: int
    tail_tokens: int
    prefix_sha256: str = Field(description="the stable prefix's hash: equal across turns when Path A is unchanged")
    pins: tuple[str, ...] = Field(description="canon records injected whole, in priority order")
    pins_truncated: tuple[str, ...] = Field(description="oversized pins cut at a paragraph boundary")
    facts: tuple[str, ...] = Field(description="the user's current facts injected")
    standing_rules: int
    tone_constraints: int
    memories: tuple[str, ...] = Field(description="recalled memories injected, in rank order")
    memories_dropped: tuple[str, ...] = Field(description="recalled memories left out for the budget, lowest first")
    over_budget: bool = Field(description="Path A alone exceeded the budget (it is never dropped)")


class AssembledContext(Frozen):
    """Three strings, kept apart by type. ``prefix`` (Path A: canon, the user's facts, standing rules) is
    byte-stable across turns while none of that changes, so provider prompt caches stay warm; ``tone`` (this
    turn's tone constraints) follows it in the system message; ``tail`` (the memories) goes beside the user's
    message. Semantic results never enter the prefix."""

    # Output only: reading one back (the typed client does) ignores the computed ``system``.
    model_config = ConfigDict(extra="ignore", frozen=True)

    prefix: str = Field(description="the stable system prefix: Path A")
    tone: str = Field(description="this turn's tone constraints: the system message after the prefix")
    tail: str = Field(description="the recalled memories: beside the user's message")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def system(self) -> str:
        """The whole system message: the stable prefix, then this turn's tone constraints."""
        return "\n\n".join(part for part in (self.prefix, self.tone) if part)


class RecallResult(Frozen):
    recall_id: str = Field(default="", description="look the turn up later: GET /v1/recalls/{recall_id}")
    memories: tuple[RecalledMemory, ...]
    tone_constraints: tuple[ToneConstraint, ...] = Field(description="from this turn's recalled memories")
    standing_rules: tuple[ToneConstraint, ...] = Field(description="in force whatever was recalled")
    resolutions: tuple[Resolution, ...] = Field(
        default=(), description="resolutions that kept a recalled memory's (or a would-be standing rule's) tone out "
                                "of force this turn",
    )
    context: AssembledContext
    trace: RecallTrace

    @property
    def tone_in_force(self) -> tuple[ToneConstraint, ...]:
        return self.tone_constraints + self.standing_rules


# -- the compact recall: what a character runtime reads ----------------------------------------------------------
# ``POST /v1/recall`` and ``GET /v1/recalls/{id}`` answer with these unless asked for ``detail=full`` (the whole
# ``RecallResult``): the full answer repeats each memory's write-time trace, its legs and its score components,
# which explain a ranking to a person and which no runtime reads. The API rounds every float it sends to 4 decimal
# places (``api.boundary.FLOAT_DECIMALS``), in both answers; the engine ranks on the exact values.

RecallDetail = Literal["compact", "full"]
"""How much of a recall the API sends: ``CompactRecall`` (the default) or the whole ``RecallResult``."""


class Feeling(Frozen):
    """How the moment felt, in brief: three numbers of the memory's write-time trace (4 decimal places)."""

    register: Register = Field(description="the emotional register the write-time pass read in it")
    valence: float = Field(ge=-1.0, le=1.0, description="-1 (very negative) .. 1 (very positive)")
    intensity: float = Field(ge=0.0, le=1.0, description="0 (flat) .. 1 (overwhelming), as it was said")


class CompactMemory(Frozen):
    """One recalled memory as a runtime reads it: what was said, when, how relevant, how it felt. The same memory
    in ``detail=full`` also carries its whole trace, its legs, its matched anchors and its score components."""

    memory_id: str = Field(description="the memory's id: GET or DELETE /v1/memories/{memory_id}")
    text: str = Field(description="what the user said")
    created_at: datetime = Field(description="when it was said")
    session_id: str = Field(description="the session it was said in")
    scope: Scope = Field(description="the memory level it came from: user, canon or shared")
    tier: Tier = Field(description="high (mention it freely), standard, or low (mention it only if the user leads)")
    calibrated_relevance: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="the probability that a good companion would bring it up (4 decimal places); the tier's source",
    )
    score: float = Field(description="its stage-two score, the order memories come in (4 decimal places)")
    stale: bool = Field(description="it carried a fact that has since been superseded: do not state it as current")
    feeling: Feeling | None = Field(
        description="how it felt; null without a complete trace: an atomic fact, or a turn whose session's "
                    "write-time pass has not run yet"
    )

    @classmethod
    def from_recalled(cls, memory: RecalledMemory) -> CompactMemory:
        trace = memory.trace if memory.trace is not None and memory.trace.status is TraceStatus.COMPLETE else None
        return cls(
            memory_id=memory.memory_id, text=memory.text, created_at=memory.created_at,
            session_id=memory.session_id, scope=memory.scope, tier=memory.tier,
            calibrated_relevance=memory.calibrated_relevance, score=memory.components.score, stale=memory.stale,
            feeling=None if trace is None else Feeling(register=trace.register, valence=trace.valence,
                                                       intensity=trace.intensity),
        )


class CompactToneRule(Frozen):
    """A tone rule in force this turn. Its ``instruction`` is already in ``context.system``; the rest says what it
    is about, for a runtime that steers more than the prompt (a voice, an avatar)."""

    register: Register = Field(description="the register of the episode the rule comes from")
    anchors: tuple[str, ...] = Field(description="what to be careful about: names, places, things")
    instruction: str = Field(description="the rule, as the system message words it")
    standing: bool = Field(description="a standing rule: in force whether or not its memories were recalled")
    anniversary_years: int | None = Field(
        default=None, ge=1, description="near the anniversary of its moment: how many years ago it was"
    )
    intensity: float = Field(ge=0.0, le=1.0, description="the episode's most intense moment (4 decimal places)")

    @classmethod
    def from_constraint(cls, constraint: ToneConstraint) -> CompactToneRule:
        return cls(register=constraint.register, anchors=constraint.anchors, instruction=constraint.instruction,
                   standing=constraint.standing, anniversary_years=constraint.anniversary_years,
                   intensity=constraint.intensity)


class CompactRecallTrace(Frozen):
    """How this recall was answered, in brief; ``detail=full`` has the legs, the counts, the floors and timings."""

    mode: RecallMode = Field(
        description="which mode answered: hybrid (normal), lexical (the embedder was down) or substring (lexical "
                    "found nothing either); anything but hybrid is a degraded answer"
    )
    profile_version: int = Field(description="the character's tuning version that ranked it")
    notes: tuple[str, ...] = Field(default=(), description="why an answer was degraded or changed, for a person")


class CompactRecall(Frozen):
    """The recall a character runtime reads (``POST /v1/recall``, the default): put ``context.system`` in the system
    message and ``context.tail`` beside the user's message. ``memories`` and the tone rules say what those strings
    were assembled from. Every float has 4 decimal places. ``detail=full`` answers the whole ``RecallResult``."""

    recall_id: str = Field(default="", description="look the turn up later: GET /v1/recalls/{recall_id}")
    context: AssembledContext = Field(description="what to show the character: system (prefix and tone) and tail")
    tone_constraints: tuple[CompactToneRule, ...] = Field(description="from this turn's recalled memories")
    standing_rules: tuple[CompactToneRule, ...] = Field(description="in force whatever was recalled")
    memories: tuple[CompactMemory, ...] = Field(description="the recalled memories, best first")
    trace: CompactRecallTrace

    @classmethod
    def from_result(cls, result: RecallResult) -> CompactRecall:
        return cls(
            recall_id=result.recall_id, context=result.context,
            tone_constraints=tuple(CompactToneRule.from_constraint(c) for c in result.tone_constraints),
            standing_rules=tuple(CompactToneRule.from_constraint(c) for c in result.standing_rules),
            memories=tuple(CompactMemory.from_recalled(m) for m in result.memories),
            trace=CompactRecallTrace(mode=result.trace.mode, profile_version=result.trace.profile_version,
                                     notes=result.trace.notes),
        )

    @property
    def tone_in_force(self) -> tuple[CompactToneRule, ...]:
        return self.tone_constraints + self.standing_rules


class IngestReport(Frozen):
    stored: int = Field(description="turns stored by this call")
    duplicates: int = Field(description="turns already stored (same turn id): not stored again")
    memories: int = Field(description="memories made from the new user turns")
    awaiting_embedding: int = Field(
        default=0, description="memories stored while the embedder was down: lexical only until backfilled"
    )


class CloseReport(Frozen):
    session_id: str
    traces_written: int
    traces_pending: int


# -- the ledger's records (``engine.domain.ports.Ledger``) ----------------------------------------------------

def partition_key(character_id: str, user_id: str) -> str:
    """A partition as the ledger keys it."""
    return f"{character_id}\x1f{user_id}"


ReviewKind = Literal["promote", "demote"]
Decision = Literal["pending", "kept", "rejected", "reverted"]
"""pending: proposed, nothing applied. kept: applied. rejected: dropped unapplied. reverted: applied, then undone
back to the exact prior state."""


class AuditEvent(BaseModel):
    """One lifecycle change of a memory: ids, statuses, strengths and (unless a strict erasure dropped them)
    proper names; never content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    partition: str
    event: str
    at: datetime
    status: str | None
    strength: float | None
    names: tuple[str, ...] | None
    actor: str


class ReviewItem(BaseModel):
    """A change consolidation proposed, with the states before and after, and what a director decided."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    kind: ReviewKind
    memory_id: str
    partition: str
    proposed_at: datetime
    score: float
    reason: str
    before: MemoryState
    after: MemoryState
    decision: Decision
    decided_at: datetime | None
    decided_by: str | None


# Models that name a model defined after them (RecallTrace names ContextTrace, Candidate a later one) are completed
# here, at import: pydantic would otherwise complete them on first use only, and a schema rendered before the first
# recall would document RecallTrace.context as {} (tests/api/test_openapi_snapshot.py).
for _model in (RecallTrace, Candidate):
    _model.model_rebuild()
