"""What the client sends and reads: the service's JSON as typed models, the client's own.

They are written here rather than imported from the server, so that a runtime installs only httpx and pydantic.
``tests/api/test_client_schema.py`` checks every model below against the OpenAPI schema the service serves (the
property names, which are required, their types), so they cannot drift apart.

What the client sends forbids unknown fields, so a misspelt field is an error here rather than a key the service
drops. The values themselves (lengths, ranges, the pattern of an id) are the service's to check: it answers 422
naming each bad field (``ValidationError.fields``). What the client reads ignores fields it does not know, so a
newer service that adds one does not break an older client. Every model is frozen; the floats the service sends
have 4 decimal places.
"""

from __future__ import annotations

import warnings
from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

__all__ = [
    "AssembledContext",
    "CloseAccepted",
    "CloseReport",
    "CloseResult",
    "CompactMemory",
    "CompactRecall",
    "CompactRecallTrace",
    "CompactToneRule",
    "ContextTrace",
    "ExtractedFact",
    "Feeling",
    "IngestReport",
    "JobStatus",
    "Leg",
    "MemoryKind",
    "RecallDetail",
    "RecallMode",
    "RecallQuery",
    "RecallResult",
    "RecallTrace",
    "RecalledMemory",
    "RecordKind",
    "Register",
    "Resolution",
    "Role",
    "Scope",
    "ScoreComponents",
    "Tier",
    "ToneConstraint",
    "Trace",
    "TraceStatus",
    "Turn",
    "WindowSource",
    "WindowTurn",
]

Register = Literal["grief", "sadness", "anxiety", "anger", "shame", "joy", "affection", "pride", "curiosity", "neutral"]
"""The emotional register of a moment."""
Role = Literal["user", "character"]
Tier = Literal["high", "standard", "low"]
"""How relevant a recalled memory is: high (mention it freely), standard, or low (only if the user leads there)."""
Scope = Literal["user", "canon", "shared"]
"""The memory level a memory came from."""
RecordKind = Literal["turn", "fact", "record"]
Leg = Literal["vector", "lexical", "substring"]
"""A retrieval leg that found a memory."""
TraceStatus = Literal["pending", "complete"]
MemoryKind = Literal["emotional", "factual"]
RecallMode = Literal["hybrid", "lexical", "substring"]
"""Which mode answered a recall: hybrid is normal, anything else is degraded."""
WindowSource = Literal["none", "passed", "stored"]
JobStatus = Literal["queued", "running", "complete", "failed", "unknown"]
RecallDetail = Literal["compact", "full"]
"""How much of a recall the service sends: ``CompactRecall`` (the default) or the whole ``RecallResult``."""


class _Sent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# -- what the client sends ---------------------------------------------------------------------------------------


class Turn(_Sent):
    """One line of a conversation, for ``ingest``. Its id is the caller's: a turn sent again is a duplicate."""

    turn_id: str
    session_id: str
    character_id: str
    user_id: str
    role: Role
    text: str
    timestamp: AwareDatetime = Field(description="when it was said, with a time zone")


class WindowTurn(_Sent):
    """One line of the conversation before the message: who said it and what."""

    role: Role
    text: str


class RecallQuery(_Sent):
    """A recall for one turn of the character: the user's message, and where and when it was said."""

    character_id: str
    user_id: str
    message: str
    window: tuple[WindowTurn, ...] | None = Field(
        default=None,
        description="the conversation's recent lines before the message, oldest first. Left out: the service reads "
                    "the session's stored turns. Empty: no window",
    )
    session_id: str | None = Field(
        default=None, description="the current session; its turns are left out unless include_current_session"
    )
    at: AwareDatetime | None = Field(default=None, description="the turn's time; now when left out")
    limit: int = Field(default=6, description="at most this many memories (1 to 40)")
    include_current_session: bool = False


# -- what the service answers -------------------------------------------------------------------------------------


class ExtractedFact(_Read):
    """An atomic fact a write-time pass found: a subject, a relation, the value, one self-contained sentence."""

    subject: str
    relation: str
    value: str
    sentence: str


# "register" is the service's word. As a field name it shadows ABCMeta.register, which nothing calls on these
# models; pydantic warns about that when the class is made, so these classes are made with that one warning off.
# A bare `register: Register` would take the inherited method as its default: each one says Field(...) instead.

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message='Field name "register"', category=UserWarning)

    class Feeling(_Read):
        """How a moment felt, in brief: three numbers of the memory's write-time trace."""

        register: Register = Field(description="the emotional register the write-time pass read in it")
        valence: float = Field(description="-1 (very negative) .. 1 (very positive)")
        intensity: float = Field(description="0 (flat) .. 1 (overwhelming), as it was said")

    class CompactToneRule(_Read):
        """A tone rule in force this turn; its ``instruction`` is already in ``context.system``."""

        register: Register = Field(description="the register of the episode the rule comes from")
        anchors: tuple[str, ...] = Field(description="what to be careful about: names, places, things")
        instruction: str
        standing: bool = Field(description="a standing rule: in force whether or not its memories were recalled")
        anniversary_years: int | None = Field(
            default=None, description="near the anniversary of its moment: how many years ago it was"
        )
        intensity: float = Field(description="the episode's most intense moment, 0 .. 1")

    class ToneConstraint(_Read):
        """A tone rule in full (``detail="full"``), with the memories it comes from."""

        register: Register = Field(description="the register of the episode the rule comes from")
        anchors: tuple[str, ...]
        instruction: str
        source_memory_ids: tuple[str, ...]
        standing: bool
        intensity: float
        valence: float
        anniversary_years: int | None = None

    class Resolution(_Read):
        """A later memory that resolved an earlier one's anxiety or anger: still recallable, no longer toned."""

        memory_id: str = Field(description="the memory resolved")
        resolved_by: str = Field(description="the memory that resolved it")
        register: Register = Field(description="the register of the memory resolved (anxiety or anger)")
        at: datetime = Field(description="when the resolving memory was said")
        cue: str
        link: str
        recorded_at: datetime
        undone_at: datetime | None = Field(default=None, description="a director undid it: the tone is back")
        undone_by: str | None = None
        note: str = Field(description='"resolved by <memory id> on <date>: <cue>"')

    class Trace(_Read):
        """A memory's write-time trace: how it felt, its anchors and facts, as the write-time pass read it."""

        memory_id: str
        status: TraceStatus
        register: Register = "neutral"
        valence: float = Field(default=0.0, description="-1 (very negative) .. 1 (very positive)")
        intensity: float = Field(default=0.0, description="0 (flat) .. 1 (overwhelming)")
        engagement: float = Field(default=0.0, description="0 (disengaged) .. 1 (fully engaged)")
        anchors: tuple[str, ...] = ()
        facts: tuple[str, ...] = ()
        extracted: tuple[ExtractedFact, ...] = ()
        kind: MemoryKind = "factual"
        written_at: datetime
        classifier: str = ""
        attempts: int = 0
        last_error: str = ""
        resolution_cue: str = ""
        resolves: tuple[str, ...] = ()


class IngestReport(_Read):
    stored: int = Field(description="turns stored by this call")
    duplicates: int = Field(description="turns already stored (same turn id): not stored again")
    memories: int = Field(description="memories made from the new user turns")
    awaiting_embedding: int = Field(default=0, description="memories stored while the embedder was down")


class CloseReport(_Read):
    """200: the session's write-time pass ran in the request (or was waited for)."""

    session_id: str
    traces_written: int
    traces_pending: int


class CloseAccepted(_Read):
    """202: the service queued the session's write-time pass as a job instead of running it in the request."""

    session_id: str
    job_id: str
    queued: bool = True
    status: JobStatus = "queued"


CloseResult = CloseReport | CloseAccepted
"""What ``close_session`` returns: the pass's report (200), or the queued job (202)."""


class AssembledContext(_Read):
    """What to show the character: ``system`` (the stable ``prefix``, then this turn's ``tone``) in the system
    message, ``tail`` (the recalled memories) beside the user's message."""

    prefix: str
    tone: str
    tail: str
    system: str


class CompactMemory(_Read):
    """One recalled memory as a runtime reads it: what was said, when, how relevant, how it felt."""

    memory_id: str
    text: str = Field(description="what the user said")
    created_at: datetime
    session_id: str
    scope: Scope
    tier: Tier
    calibrated_relevance: float | None = Field(
        default=None, description="the probability that a good companion would bring it up; the tier's source"
    )
    score: float = Field(description="its stage-two score, the order memories come in")
    stale: bool = Field(description="it carried a fact that has since been superseded: do not state it as current")
    feeling: Feeling | None = Field(description="how it felt; None without a complete trace")


class CompactRecallTrace(_Read):
    mode: RecallMode
    profile_version: int = Field(description="the character's tuning version that ranked it")
    notes: tuple[str, ...] = Field(default=(), description="why an answer was degraded or changed, for a person")


class CompactRecall(_Read):
    """The recall a runtime reads (the default): ``context`` to show the character, and what it was made from."""

    recall_id: str = Field(default="", description="look the turn up later: GET /v1/recalls/{recall_id}")
    context: AssembledContext
    tone_constraints: tuple[CompactToneRule, ...] = Field(description="from this turn's recalled memories")
    standing_rules: tuple[CompactToneRule, ...] = Field(description="in force whatever was recalled")
    memories: tuple[CompactMemory, ...] = Field(description="the recalled memories, best first")
    trace: CompactRecallTrace

    @property
    def tone_in_force(self) -> tuple[CompactToneRule, ...]:
        return self.tone_constraints + self.standing_rules


# -- the whole recall (detail="full"), for debugging and evaluation -------------------------------------------------


class ScoreComponents(_Read):
    """Every factor of a memory's stage-two score, so a ranking explains itself."""

    relevance: float
    salience: float
    salience_weight: float
    anchor_boost: float
    strength: float = 1.0
    scope_weight: float = 1.0
    age_days: float
    half_life_days: float
    score: float


class RecalledMemory(_Read):
    memory_id: str
    text: str
    context: str
    session_id: str
    created_at: datetime
    legs: tuple[Leg, ...]
    trace: Trace | None
    matched_anchors: tuple[str, ...]
    window_anchors: tuple[str, ...] = ()
    tier: Tier = "standard"
    calibrated_relevance: float | None = None
    relevance_lead: float | None = None
    kind: RecordKind = "turn"
    scope: Scope = "user"
    stale: bool = False
    components: ScoreComponents
    resolution: Resolution | None = None


class ContextTrace(_Read):
    """What the character was shown on one turn, and why."""

    tokenizer: str
    budget_tokens: int
    prefix_tokens: int
    tone_tokens: int
    tail_tokens: int
    prefix_sha256: str
    pins: tuple[str, ...]
    pins_truncated: tuple[str, ...]
    facts: tuple[str, ...]
    standing_rules: int
    tone_constraints: int
    memories: tuple[str, ...]
    memories_dropped: tuple[str, ...]
    over_budget: bool


class RecallTrace(_Read):
    """How a recall answered: which legs ran, how many candidates each found, where the floors cut, timings."""

    mode: RecallMode
    legs: tuple[Leg, ...]
    vector_candidates: int
    lexical_candidates: int
    fused_candidates: int
    dropped_below_floor: int
    excluded_current_session: int
    window_turns: int = 0
    window_source: WindowSource = "none"
    vector_threshold: float | None = None
    fused_floor: float | None = None
    standing_rule_memories: int
    resolved_tone_memories: int = 0
    timings_ms: dict[str, float]
    profile_version: int
    notes: tuple[str, ...] = ()
    context: ContextTrace | None = None


class RecallResult(_Read):
    """The whole recall: each memory's write-time trace and score components, and the recall's full trace."""

    recall_id: str = ""
    memories: tuple[RecalledMemory, ...]
    tone_constraints: tuple[ToneConstraint, ...]
    standing_rules: tuple[ToneConstraint, ...]
    resolutions: tuple[Resolution, ...] = ()
    context: AssembledContext
    trace: RecallTrace

    @property
    def tone_in_force(self) -> tuple[ToneConstraint, ...]:
        return self.tone_constraints + self.standing_rules
