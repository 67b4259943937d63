"""The stored records: turns, partitions, memories with their facts, states and write-time traces, resolutions,
and what ingest and close report. Also the vocabularies they use (registers, identifiers)."""

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
"""Room for a namespace before an id (``engine.domain.scopes``): a namespace of 1-63 characters and ``:``."""
NamespacedIdentifier = Annotated[
    str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS + NAMESPACE_MAX_CHARS, pattern=IDENTIFIER_PATTERN)
]
"""An id as stored: a caller's ``Identifier``, possibly in a namespace. Stored turns are validated again when read
back, so a limit of the caller's length would make a 200-character id stored as ``acme:<id>`` unreadable."""


# "register" is the domain's word (FORMAT.md); it only shadows ABCMeta.register, which nothing here calls.
warnings.filterwarnings("ignore", message='Field name "register"', category=UserWarning)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(Frozen):
    """One message of a conversation, as a character runtime reports it."""

    turn_id: NamespacedIdentifier
    session_id: NamespacedIdentifier
    character_id: NamespacedIdentifier
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

    subject: str = Field(min_length=1, max_length=120)  # normalised, lower case: "user", "user's dog"
    relation: str = Field(min_length=1, max_length=60, pattern=r"^[a-z_]+$")
    value: str = Field(min_length=1, max_length=200)  # the object as said: "Lisbon"
    sentence: str = Field(min_length=1, max_length=500)  # "The user lives in Lisbon."


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

    retrievals: int = Field(default=0, ge=0)  # times recall returned the memory
    mentions: int = Field(default=1, ge=0)  # times the same content was written (a fact coming back)
    query_kinds: tuple[str, ...] = ()  # distinct kinds of query that reached it (capped)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    last_validated: AwareDatetime | None = None  # decay runs from here; None: created
    last_retrieved: AwareDatetime | None = None
    source: Source = "user_stated"


class Rehearsal(Frozen):
    """A memory's place on the Leitner schedule (``engine.rehearsal``): which box, when it is next due, and the
    last cue and check. Box 1 is checked soonest; each confirmation moves it up a box, to a longer interval."""

    box: int = Field(default=1, ge=1)
    due: AwareDatetime  # from here on, Path A may carry a cue to re-check it
    reason: str = Field(max_length=60)  # why it is enrolled: "allergy", "diet", "close name", "bereavement", "pinned"
    enrolled_at: AwareDatetime
    cued_at: AwareDatetime | None = None  # when a recall last carried its cue
    cued_session: str | None = None  # the session that cue went to (at most one cue a session)
    confirmed_at: AwareDatetime | None = None  # when a later turn last confirmed it


class MemoryState(Frozen):
    """A memory's lifecycle, apart from its content (which never changes): status, supersession, pins, strength."""

    memory_id: str
    status: Status = "active"
    prior_status: Status | None = None  # what an archived memory is restored to
    superseded_by: str | None = None  # the fact that replaced this one (or its fact)
    stale: bool = False  # a turn whose fact was superseded: it never outranks the fact
    pinned: bool = False
    signals: StrengthSignals = StrengthSignals()
    changed_at: AwareDatetime | None = None
    rehearsal: Rehearsal | None = None  # enrolled in rehearsal: re-checked on a Leitner schedule
    overrides_canon: bool = False  # a user's fact on a canon slot that a director let stand for this user


class Trace(Frozen):
    """What the write-time pass wrote beside a memory: how the moment felt, and what it was about."""

    memory_id: str
    status: TraceStatus
    register: Register = "neutral"
    valence: float = Field(default=0.0, ge=-1.0, le=1.0)  # -1 (very negative) .. 1 (very positive)
    intensity: float = Field(default=0.0, ge=0.0, le=1.0)  # 0 (flat) .. 1 (overwhelming)
    engagement: float = Field(default=0.0, ge=0.0, le=1.0)  # 0 (disengaged) .. 1 (fully engaged)
    anchors: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()  # durable facts the user stated, one sentence each ("The user lives in Lisbon.")
    # facts a model-backed classifier found, with their slots (written as facts)
    extracted: tuple[ExtractedFact, ...] = ()
    kind: MemoryKind = MemoryKind.FACTUAL
    written_at: AwareDatetime
    classifier: str = ""  # name@version of what classified the memory
    attempts: int = Field(default=0, ge=0)  # write-time attempts so far (pending traces are retried)
    last_error: str = ""
    # why the memory reads as a resolution ("the result came back fine (rule)"); empty when not
    resolution_cue: str = Field(default="", max_length=200)
    # earlier memories whose anxiety or anger this one resolved, as the write-time pass found them (the ledger's
    # resolutions say whether each is still in force)
    resolves: tuple[str, ...] = ()


class Resolution(Frozen):
    """An earlier memory's tone taken out of force by a later memory of the same episode (``traces.resolution``).

    Holds ids, a register, times and labels from a fixed vocabulary, never what was said."""

    # Output only: reading one back (a logged recall, the typed client) ignores the computed ``note``.
    model_config = ConfigDict(extra="ignore", frozen=True)

    memory_id: str  # the memory resolved: no longer toned, still recallable
    resolved_by: str  # the memory that resolved it
    # A Field, not a bare annotation: pydantic would take the inherited ABCMeta.register as the default.
    register: Register = Field()  # the register of the memory resolved (anxiety or anger)
    at: AwareDatetime  # when the resolving memory was said; in force for recalls from then on
    cue: str  # why the resolving memory reads as resolution ("an apology (rule)")
    link: str  # why the two belong together ("shared anchor", "similar meaning (0.71)")
    recorded_at: AwareDatetime
    undone_at: AwareDatetime | None = None  # a director undid it: the tone is back
    undone_by: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def note(self) -> str:
        """The explanation recall shows: "resolved by <memory id> on <date>: <cue>"."""
        undone = f" (undone {self.undone_at.date().isoformat()})" if self.undone_at else ""
        return f"resolved by {self.resolved_by} on {self.at.date().isoformat()}: {self.cue}{undone}"


class IngestReport(Frozen):
    stored: int  # turns stored by this call
    duplicates: int  # turns already stored (same turn id): not stored again
    memories: int  # memories made from the new user turns
    awaiting_embedding: int = 0  # memories stored while the embedder was down: lexical only until backfilled


class CloseReport(Frozen):
    session_id: str
    traces_written: int
    traces_pending: int
