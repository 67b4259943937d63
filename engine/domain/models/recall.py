"""What recall is asked and answers in full: the query, stage one's candidates, each recalled memory with its
score components, the tone constraints, the assembled context and the trace."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field, computed_field

from engine.domain.models.records import (
    AwareDatetime,
    Frozen,
    Identifier,
    RecordKind,
    Register,
    Resolution,
    Role,
    Scope,
    Trace,
)


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
    salience: float  # trace intensity decayed by age (emotional) or the flat factual weight
    salience_weight: float  # the multiplier salience contributes: base + (1 - base) * salience
    anchor_boost: float  # 1 when no anchor matched, the profile's boost when one did
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
    # its anchors the conversation window named but the message did not (a lower boost)
    window_anchors: tuple[str, ...] = ()
    # how relevant stage one found it, on the fused score: high (mention it freely), standard, or low (a weak match: the
    # best there was; mention it only if the user leads there)
    tier: Tier = "standard"
    # the probability that this is a memory a good companion would bring up, from the fused relevance and how far it
    # stands above the query's other matches; the tier is read from it
    calibrated_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    # how far its fused relevance stands above the median of the query's best matches (stage one)
    relevance_lead: float | None = None
    kind: RecordKind = "turn"
    scope: Scope = "user"  # the memory level it came from: user, canon or shared
    stale: bool = False  # it carried a fact that has since been superseded
    components: ScoreComponents
    resolution: Resolution | None = None  # a later memory resolved its feeling: recalled as a memory, no tone rule


class ToneConstraint(Frozen):
    """A rule for the character's tone, added to the system message."""

    register: Register = Field()  # the register of the episode the rule comes from
    anchors: tuple[str, ...]
    instruction: str
    source_memory_ids: tuple[str, ...]
    standing: bool  # a standing rule: in force whether or not its memories were recalled
    intensity: float
    valence: float
    # a standing rule near the anniversary of its moment: how many years ago it was (the instruction says so); none
    # outside the profile's tone.anniversary_window_days, and never on a rule that is not standing
    anniversary_years: int | None = Field(default=None, ge=1)


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
    window_turns: int = 0  # lines of the conversation window the query read
    # where the window came from: the request, or the session's stored turns
    window_source: Literal["none", "passed", "stored"] = "none"
    # the cosine a vector hit needed on this query (relative when every match is weak)
    vector_threshold: float | None = None
    fused_floor: float | None = None  # the fused relevance a hit needed on this query
    standing_rule_memories: int
    resolved_tone_memories: int = 0  # memories that would carry a tone rule but were resolved by a later memory
    timings_ms: dict[str, float]
    profile_version: int
    notes: tuple[str, ...] = ()
    context: ContextTrace | None = None
    rehearsal_due: int = 0  # the user's rehearsed facts due a check (engine.rehearsal)
    rehearsal_note: str = ""  # why none was offered though one was due (a check this session, the cadence)


class ContextTrace(Frozen):
    """What the character was shown on one turn, and why: enough to answer "what did it see" later."""

    tokenizer: str  # what counted the tokens
    budget_tokens: int  # the whole budget: Path A first, Path B fills the rest
    prefix_tokens: int
    tone_tokens: int
    tail_tokens: int
    prefix_sha256: str  # the stable prefix's hash: equal across turns when Path A is unchanged
    pins: tuple[str, ...]  # canon records injected whole, in priority order
    pins_truncated: tuple[str, ...]  # oversized pins cut at a paragraph boundary
    facts: tuple[str, ...]  # the user's current facts injected
    standing_rules: int
    tone_constraints: int
    memories: tuple[str, ...]  # recalled memories injected, in rank order
    memories_dropped: tuple[str, ...]  # recalled memories left out for the budget, lowest first
    over_budget: bool  # Path A alone exceeded the budget (it is never dropped)
    rehearsal: str | None = None  # the rehearsed fact whose optional check the tone part carries


class AssembledContext(Frozen):
    """Three strings, kept apart by type. ``prefix`` (Path A: canon, the user's facts, standing rules) is
    byte-stable across turns while none of that changes, so provider prompt caches stay warm; ``tone`` (this
    turn's tone constraints) follows it in the system message; ``tail`` (the memories) goes beside the user's
    message. Semantic results never enter the prefix."""

    # Output only: reading one back (the typed client does) ignores the computed ``system``.
    model_config = ConfigDict(extra="ignore", frozen=True)

    prefix: str  # the stable system prefix: Path A
    tone: str  # this turn's tone constraints: the system message after the prefix
    tail: str  # the recalled memories: beside the user's message

    @computed_field  # type: ignore[prop-decorator]
    @property
    def system(self) -> str:
        """The whole system message: the stable prefix, then this turn's tone constraints."""
        return "\n\n".join(part for part in (self.prefix, self.tone) if part)


class RehearsalCue(Frozen):
    """One optional, natural check of a rehearsed fact for the character (``engine.rehearsal``): at most one a
    session. A later turn that says the fact again moves it up a box; a new value files a review item."""

    memory_id: str
    reason: str  # allergy, diet, close_name, bereavement, pinned
    box: int
    due: datetime
    instruction: str  # what the tone part of the system message says


class RecallResult(Frozen):
    recall_id: str = ""
    memories: tuple[RecalledMemory, ...]
    tone_constraints: tuple[ToneConstraint, ...]  # from this turn's recalled memories
    standing_rules: tuple[ToneConstraint, ...]  # in force whatever was recalled
    # resolutions that kept a recalled memory's (or a would-be standing rule's) tone out of force this turn
    resolutions: tuple[Resolution, ...] = ()
    rehearsal: RehearsalCue | None = None  # this turn's optional check of a rehearsed fact
    context: AssembledContext
    trace: RecallTrace

    @property
    def tone_in_force(self) -> tuple[ToneConstraint, ...]:
        return self.tone_constraints + self.standing_rules


# Models that name a model defined after them (RecallTrace names ContextTrace, Candidate a later one) are completed
# here, at import: pydantic would otherwise complete them on first use only, and a schema rendered before the first
# recall would document RecallTrace.context as {} (tests/api/test_openapi_snapshot.py).
for _model in (RecallTrace, Candidate):
    _model.model_rebuild()
