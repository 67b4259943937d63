"""What the client sends and reads: the service's JSON as typed models, the client's own.

They are the wire schema of the service itself: its routes declare and answer with the models this module defines
(``api.wire`` converts the engine's objects into them, refusing one that carries a field the model lacks), so a
change to the engine changes no answer unless a model here changes too. They import nothing of the server, so
that a runtime installs only httpx and pydantic. ``tests/api/test_client_schema.py`` checks every model below
against the OpenAPI schema the service serves (the property names, which are required, their types).

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
    "AuditEvent",
    "CloseAccepted",
    "CloseReport",
    "CloseResult",
    "CompactMemory",
    "CompactRecall",
    "CompactRecallTrace",
    "CompactToneRule",
    "ContextTrace",
    "Decision",
    "ErasureReceipt",
    "ExtractedFact",
    "FactWrite",
    "Feeling",
    "IngestReport",
    "JobState",
    "JobStatus",
    "Leg",
    "MemoryKind",
    "MemoryState",
    "RecallDetail",
    "RecallMode",
    "RecallQuery",
    "RecallResult",
    "RecallTrace",
    "RecalledMemory",
    "RecordKind",
    "Register",
    "Rehearsal",
    "RehearsalCue",
    "Resolution",
    "ReviewItem",
    "ReviewKind",
    "ReviewSide",
    "Role",
    "Scope",
    "ScoreComponents",
    "Source",
    "Status",
    "StrengthSignals",
    "SweepReport",
    "Tier",
    "ToneConstraint",
    "Trace",
    "TraceStatus",
    "TrustRecord",
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
Status = Literal["active", "provisional", "revoked", "archived"]
"""A memory's lifecycle status: only active memories are in everyday recall; archived ones can be restored."""
Source = Literal["user_stated", "inferred", "model_generated", "director"]
ReviewKind = Literal["promote", "demote", "conflict", "contradiction"]
Decision = Literal["pending", "kept", "rejected", "reverted", "auto_kept"]


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

    subject: str = Field(description='normalised, lower case: "user", "user\'s dog"')
    relation: str = Field(
        description='lower case with underscores ("lives_in"); subject and relation name the slot a later fact on '
                    "it supersedes"
    )
    value: str = Field(description='the object as said: "Lisbon"')
    sentence: str = Field(description='"The user lives in Lisbon."')


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
        instruction: str = Field(description="the rule, as the system message words it")
        standing: bool = Field(description="a standing rule: in force whether or not its memories were recalled")
        anniversary_years: int | None = Field(
            default=None, description="near the anniversary of its moment: how many years ago it was"
        )
        intensity: float = Field(description="the episode's most intense moment (4 decimal places)")

    class ToneConstraint(_Read):
        """A tone rule in full (``detail="full"``), with the memories it comes from."""

        register: Register = Field(description="the register of the episode the rule comes from")
        anchors: tuple[str, ...] = Field(
            description="what to be careful about: the anchors of the episode's memories, most intense memory first"
        )
        instruction: str = Field(description="the rule, as the system message words it")
        source_memory_ids: tuple[str, ...] = Field(
            description="the episode's memories the rule comes from, most intense first (the first speaks for it)"
        )
        standing: bool = Field(description="a standing rule: in force whether or not its memories were recalled")
        intensity: float = Field(description="the episode's most intense moment: 0 (flat) .. 1 (overwhelming)")
        valence: float = Field(
            description="the episode's most negative valence: -1 (very negative) .. 1 (very positive)"
        )
        anniversary_years: int | None = Field(
            default=None,
            description="a standing rule near the anniversary of its moment: how many years ago it was (the "
                        "instruction says so); none outside the profile's tone.anniversary_window_days, and never "
                        "on a rule that is not standing",
        )

    class Resolution(_Read):
        """A later memory that resolved an earlier one's anxiety or anger: still recallable, no longer toned."""

        memory_id: str = Field(description="the memory resolved: no longer toned, still recallable")
        resolved_by: str = Field(description="the memory that resolved it")
        register: Register = Field(description="the register of the memory resolved (anxiety or anger)")
        at: datetime = Field(description="when the resolving memory was said; in force for recalls from then on")
        cue: str = Field(description='why the resolving memory reads as resolution ("an apology (rule)")')
        link: str = Field(description='why the two belong together ("shared anchor", "similar meaning (0.71)")')
        recorded_at: datetime = Field(description="when the write-time pass recorded the resolution")
        undone_at: datetime | None = Field(default=None, description="a director undid it: the tone is back")
        undone_by: str | None = Field(
            default=None, description="who undid it (role:key id); null while the resolution is in force"
        )
        note: str = Field(description='The explanation recall shows: "resolved by <memory id> on <date>: <cue>".')

    class Trace(_Read):
        """A memory's write-time trace: how it felt, its anchors and facts, as the write-time pass read it."""

        memory_id: str = Field(description="the memory the trace was written beside")
        status: TraceStatus = Field(
            description="complete, or pending: the write-time pass has not run or failed, and is retried (its "
                        "feeling and anchors are then the defaults)"
        )
        register: Register = Field(
            default="neutral", description="the emotional register the write-time pass read in it"
        )
        valence: float = Field(default=0.0, description="-1 (very negative) .. 1 (very positive)")
        intensity: float = Field(default=0.0, description="0 (flat) .. 1 (overwhelming)")
        engagement: float = Field(default=0.0, description="0 (disengaged) .. 1 (fully engaged)")
        anchors: tuple[str, ...] = Field(
            default=(),
            description="what it was about: names, places, things; a memory whose anchor the message names can "
                        "rank higher",
        )
        facts: tuple[str, ...] = Field(
            default=(), description='durable facts the user stated, one sentence each ("The user lives in Lisbon.")'
        )
        extracted: tuple[ExtractedFact, ...] = Field(
            default=(), description="facts a model-backed classifier found, with their slots (written as facts)"
        )
        kind: MemoryKind = Field(
            default="factual",
            description="emotional (its salience decays on a clock set by its intensity, and it may carry a tone "
                        "rule) or factual (a flat weight that barely decays)",
        )
        written_at: datetime = Field(description="when the write-time pass wrote it (a pending one: its last attempt)")
        classifier: str = Field(default="", description="name@version of what classified the memory")
        attempts: int = Field(default=0, description="write-time attempts so far (pending traces are retried)")
        last_error: str = Field(
            default="", description="why the last attempt failed (a pending trace); empty when none did"
        )
        resolution_cue: str = Field(
            default="",
            description='why the memory reads as a resolution ("the result came back fine (rule)"); empty when not',
        )
        resolves: tuple[str, ...] = Field(
            default=(),
            description="earlier memories whose anxiety or anger this one resolved, as the write-time pass found "
                        "them (the ledger's resolutions say whether each is still in force)",
        )


class IngestReport(_Read):
    stored: int = Field(description="turns stored by this call")
    duplicates: int = Field(description="turns already stored (same turn id): not stored again")
    memories: int = Field(description="memories made from the new user turns")
    awaiting_embedding: int = Field(
        default=0, description="memories stored while the embedder was down: lexical only until backfilled"
    )


class CloseReport(_Read):
    """200: the session's write-time pass ran in the request (or was waited for)."""

    session_id: str = Field(description="the session closed")
    traces_written: int = Field(
        description="write-time traces written by this pass (0 when every memory already had a complete one)"
    )
    traces_pending: int = Field(
        description="memories whose trace is still pending (the classifier failed, or its retries ran out): the "
                    "background pass retries them"
    )


class CloseAccepted(_Read):
    """202: the service queued the session's write-time pass as a job instead of running it in the request."""

    session_id: str = Field(description="the session closed")
    job_id: str = Field(
        description="the write-time job; derived from the session, so a repeated close shares it. GET "
                    "/v1/jobs/{job_id} tells where it is"
    )
    queued: bool = Field(
        default=True, description="the job had not finished (complete or failed) when the close answered"
    )
    status: JobStatus = Field(default="queued", description="where the job was when the close answered")


CloseResult = CloseReport | CloseAccepted
"""What ``close_session`` returns: the pass's report (200), or the queued job (202)."""


class AssembledContext(_Read):
    """What to show the character: ``system`` (the stable ``prefix``, then this turn's ``tone``) in the system
    message, ``tail`` (the recalled memories) beside the user's message."""

    prefix: str = Field(description="the stable system prefix: Path A")
    tone: str = Field(description="this turn's tone constraints: the system message after the prefix")
    tail: str = Field(description="the recalled memories: beside the user's message")
    system: str = Field(description="The whole system message: the stable prefix, then this turn's tone constraints.")


class CompactMemory(_Read):
    """One recalled memory as a runtime reads it: what was said, when, how relevant, how it felt."""

    memory_id: str = Field(description="the memory's id: GET or DELETE /v1/memories/{memory_id}")
    text: str = Field(description="what the user said")
    created_at: datetime = Field(description="when it was said")
    session_id: str = Field(description="the session it was said in")
    scope: Scope = Field(description="the memory level it came from: user, canon or shared")
    tier: Tier = Field(description="high (mention it freely), standard, or low (mention it only if the user leads)")
    calibrated_relevance: float | None = Field(
        default=None,
        description="the probability that a good companion would bring it up (4 decimal places); the tier's source",
    )
    score: float = Field(description="its stage-two score, the order memories come in (4 decimal places)")
    stale: bool = Field(description="it carried a fact that has since been superseded: do not state it as current")
    feeling: Feeling | None = Field(
        description="how it felt; null without a complete trace: an atomic fact, or a turn whose session's "
                    "write-time pass has not run yet"
    )


class CompactRecallTrace(_Read):
    mode: RecallMode = Field(
        description="which mode answered: hybrid (normal), lexical (the embedder was down) or substring (lexical "
                    "found nothing either); anything but hybrid is a degraded answer"
    )
    profile_version: int = Field(description="the character's tuning version that ranked it")
    notes: tuple[str, ...] = Field(default=(), description="why an answer was degraded or changed, for a person")


class RehearsalCue(_Read):
    """An optional, natural check of a rehearsed fact for the character. The user saying the fact again moves it
    up a box (a longer wait before the next check); a new value files a review item instead of replacing it."""

    memory_id: str = Field(description="the rehearsed fact")
    reason: str = Field(description="why it is rehearsed: allergy, diet, close_name, bereavement or pinned")
    box: int = Field(description="its Leitner box: 1 is checked soonest")
    due: datetime = Field(description="when it fell due")
    instruction: str = Field(description="what the system message tells the character")


class CompactRecall(_Read):
    """The recall a runtime reads (the default): ``context`` to show the character, and what it was made from."""

    recall_id: str = Field(default="", description="look the turn up later: GET /v1/recalls/{recall_id}")
    context: AssembledContext = Field(description="what to show the character: system (prefix and tone) and tail")
    tone_constraints: tuple[CompactToneRule, ...] = Field(description="from this turn's recalled memories")
    standing_rules: tuple[CompactToneRule, ...] = Field(description="in force whatever was recalled")
    memories: tuple[CompactMemory, ...] = Field(description="the recalled memories, best first")
    rehearsal: RehearsalCue | None = Field(
        default=None,
        description="this turn's optional check of a rehearsed fact (an allergy, a diet, a close name, a loss), also "
                    "in context.system: at most one a session, never required",
    )
    trace: CompactRecallTrace

    @property
    def tone_in_force(self) -> tuple[CompactToneRule, ...]:
        return self.tone_constraints + self.standing_rules


# -- what the lifecycle, audit and job endpoints answer -------------------------------------------------------------
# A runtime's client calls none of these; they are the service's JSON all the same (the service answers with these
# very models), for an admin tool or a script that reads them.


class JobState(_Read):
    """Where a queued write-time pass is (``GET /v1/jobs/{job_id}``)."""

    job_id: str = Field(description="the job asked about, as the session's close answered it")
    status: JobStatus = Field(
        description="queued (waiting, or deferred for a retry), running, complete (the pass ran; its report says "
                    "whether traces are still pending), failed (it raised), or unknown (no such job, or its result "
                    "has expired)"
    )
    report: CloseReport | None = Field(default=None, description="the write-time pass's report, once complete")


class StrengthSignals(_Read):
    """What a memory's strength is computed from: its use, repetition, confidence, age and source."""

    retrievals: int = Field(default=0, description="times recall returned the memory")
    mentions: int = Field(default=1, description="times the same content was written (a fact coming back)")
    query_kinds: tuple[str, ...] = Field(default=(), description="distinct kinds of query that reached it (capped)")
    confidence: float = Field(
        default=1.0, description="0 .. 1, a factor of the strength; a kept demotion (GET /v1/review) halves it"
    )
    last_validated: datetime | None = Field(default=None, description="decay runs from here; None: created")
    last_retrieved: datetime | None = Field(
        default=None,
        description="when recall last returned it; null: never. Folded in off the request path (the background "
                    "pass, the sweep), so it lags behind the latest recalls, as retrievals does",
    )
    source: Source = Field(
        default="user_stated",
        description="where it came from; its trust is a factor of the strength: user_stated and director 1, "
                    "inferred 0.7, model_generated 0.5",
    )


class Rehearsal(_Read):
    """A fact's place on the rehearsal (Leitner) schedule: enrolled by the sweep because it is high-stakes."""

    box: int = Field(description="1 is checked soonest; each confirmation moves it up a box, to a longer wait")
    due: datetime = Field(description="from then on, recall may offer the character one optional check of it")
    reason: str = Field(description="why it is rehearsed: allergy, diet, close_name, bereavement or pinned")
    enrolled_at: datetime
    cued_at: datetime | None = Field(default=None, description="when a recall last offered its check")
    cued_session: str | None = Field(default=None, description="the session that check went to")
    confirmed_at: datetime | None = Field(default=None, description="when the user last said it again")


class MemoryState(_Read):
    """A memory's lifecycle, apart from its content: status, supersession, pin and strength signals."""

    memory_id: str = Field(description="the memory this is the state of")
    status: Status = Field(
        default="active",
        description="active (in recall), provisional (waiting for review, out of recall), revoked (superseded or "
                    "rejected, out of recall for good) or archived (decayed into the cold archive, restorable)",
    )
    prior_status: Status | None = Field(default=None, description="what an archived memory is restored to")
    superseded_by: str | None = Field(default=None, description="the fact that replaced this one (or its fact)")
    stale: bool = Field(default=False, description="a turn whose fact was superseded: it never outranks the fact")
    pinned: bool = Field(
        default=False,
        description="pinned (POST /v1/memories/{memory_id}/pin): its strength never falls below the pin floor, "
                    "and the sweep never archives it",
    )
    signals: StrengthSignals = StrengthSignals()
    changed_at: datetime | None = Field(
        default=None,
        description="when this state last changed (a fact's write, an archive, restore, pin, supersession or review "
                    "decision; usage does not count); null: a memory whose state never changed",
    )
    rehearsal: Rehearsal | None = Field(
        default=None,
        description="its place on the rehearsal schedule; null: not enrolled (see the profile's rehearsal)",
    )
    overrides_canon: bool = Field(
        default=False,
        description="a user's fact on a slot the character's canon holds, which a director let stand for this user "
                    "(a kept conflict ticket); otherwise the character speaks canon",
    )


class FactWrite(_Read):
    """What writing a fact did (``POST /v1/facts``); ``erased``: a fact the user had erased, not written again."""

    fact_id: str = Field(
        description="the fact's id: the same for the same content on the same slot and level (a write again, a "
                    "retry); with deduplicated, the stored fact's"
    )
    status: Status = Field(
        description="computed by the service, never taken from the caller: active (in recall) or provisional "
                    "(out of recall until a reviewer keeps it)"
    )
    outcome: Literal["written", "deduplicated", "promoted", "erased"] = Field(
        description="written: stored. deduplicated: the same content was already stored (a mention more). "
                    "promoted: the same content was provisional and is now active. erased: the user had erased "
                    "it, not written again"
    )
    superseded: tuple[str, ...] = Field(
        default=(), description="the facts on its slot that it revoked (they point to it); empty unless it went active"
    )
    stale_memories: tuple[str, ...] = Field(
        default=(),
        description="the memories the revoked facts were distilled from, now stale: they never outrank the new fact",
    )


class ErasureReceipt(_Read):
    """What an erasure removed (``DELETE /v1/memories/{id}``, ``DELETE /v1/users/{id}``): ids and counts."""

    memories: tuple[str, ...] = Field(description="the ids of the memories erased (user turns)")
    facts: tuple[str, ...] = Field(
        description="the ids of the facts erased: a user's every fact, or the fact erased and those distilled from "
                    "the memory erased"
    )
    traces: int = Field(description="write-time traces deleted")
    turns: int = Field(
        description="raw turns deleted: a user's erasure, every turn of the conversation (both roles); one "
                    "memory's, the turn it was made from"
    )
    review_items: int = Field(description="review-queue items deleted (a user's erasure; 0 for one memory's)")
    recalls: int = Field(
        default=0, description="recall-log entries deleted: a user's every one, or those that showed the memory erased"
    )
    strict: bool = Field(description="strict=true: the audit trail's events of what was erased keep no names either")
    audit_kept: bool = Field(
        default=True,
        description="an audit skeleton of what was erased stays (GET /v1/audit): ids, events, statuses, strengths "
                    "and, unless strict, proper names; never content",
    )


class SweepReport(_Read):
    """What a sweep did (``POST /v1/maintenance/sweep``): partitions visited, memories archived, proposals made."""

    partitions: int = Field(
        description="partitions visited: each user's with each character, and the canon and shared levels they see"
    )
    archived: int = Field(
        description="memories moved to the cold archive: their strength fell below the profile's "
                    "strength.archive_below (pinned memories and canon never are)"
    )
    proposed: int = Field(description="proposals filed to the review queue (GET /v1/review): promotions and demotions")
    repaired: int = Field(
        description="interrupted supersessions finished: older facts revoked where a slot had two active"
    )
    usage_flushed: int = Field(
        description="recall returns folded into strength signals (one per memory per recall since the last fold)"
    )
    recalls_expired: int = Field(
        default=0,
        description="recall-log entries removed by the retention (older than FELTSENSE_RECALL_LOG__DAYS, or beyond "
                    "FELTSENSE_RECALL_LOG__MAX_BYTES)",
    )
    auto_kept: int = Field(
        default=0, description="proposals kept on the organisation's earned trust (decision auto_kept), each undoable"
    )
    enrolled: int = Field(default=0, description="facts newly put on the rehearsal schedule")


class AuditEvent(_Read):
    """One lifecycle change of a memory (``GET /v1/audit``): ids, statuses, strengths and (unless a strict erasure
    dropped them) proper names; never content. ``partition`` is ``character/user``."""

    memory_id: str = Field(description="the memory that changed (it may since have been erased)")
    partition: str = Field(
        description="the memory's partition, character/user (the canon and shared levels' reserved ids start with ~)"
    )
    event: str = Field(
        description="what happened: written, restated, promoted, superseded, marked_stale (facts); canon_written; "
                    "archived, restored, pinned, unpinned, erased; promote_kept, demote_kept, promote_reverted, "
                    "demote_reverted (review decisions); resolved, resolution_undone"
    )
    at: datetime = Field(description="when it happened")
    status: str | None = Field(
        description="the memory's status as of the event (erased: its last); null for resolved and resolution_undone"
    )
    strength: float | None = Field(
        description="its live strength, 0 .. 1, at the event; only archive, restore, pin, erasure and review "
                    "decision events record one, the others null"
    )
    names: tuple[str, ...] | None = Field(
        description='the proper names it was about ("Luna", never "brother" or "job"); null once a strict erasure '
                    "dropped them"
    )
    actor: str = Field(
        description='who did it: an API key as role:key id, or the service itself ("system", "sweep")'
    )


class ReviewSide(_Read):
    """One side of a conflict or a contradiction."""

    memory_id: str
    scope: Scope = Field(description="user (the user's fact) or canon (the character's)")
    text: str = Field(description="the fact's sentence")


class ReviewItem(_Read):
    """A change consolidation proposed (``GET /v1/review``), the states before and after, and the decision."""

    item_id: str = Field(description="decide it with POST /v1/review/{item_id}")
    kind: ReviewKind = Field(
        description="promote: a provisional fact that cleared the consolidation gate goes active, its base strength "
                    "the gate's score. demote: a low-value memory recall keeps returning has its confidence halved. "
                    "conflict: a user's fact on a slot the character's canon holds (filed in the canon's queue, for a "
                    "director; kept: it stands for that user). contradiction: a new value on a rehearsed fact's slot "
                    "(kept: the new fact replaces it). Each once kept"
    )
    memory_id: str = Field(description="the memory the change is to")
    partition: str = Field(
        description="the memory's partition, character/user (the canon and shared levels' reserved ids start with ~)"
    )
    proposed_at: datetime = Field(description="when the sweep proposed it")
    score: float = Field(description="a promotion's gate score (its starting strength); otherwise the memory's live "
                                     "strength, 0 .. 1, when it was proposed")
    reason: str = Field(description='why, for a person: "blended score 0.62 >= 0.5; stated 3 times, recalled 4 '
                                    'times", "low-value memory retrieved 20 times"')
    before: MemoryState
    after: MemoryState
    decision: Decision = Field(
        description="pending (nothing applied), kept (applied by a person), rejected (dropped unapplied), reverted "
                    "(applied, then undone back to the exact prior state) or auto_kept (applied on earned trust, "
                    "decided_by trust; undone, it is pending again)"
    )
    decided_at: datetime | None = Field(description="when the latest decision was made; null while pending")
    decided_by: str | None = Field(
        description="who made the latest decision (role:key id, or trust for an automatic keep); null while pending"
    )
    change_kind: str = Field(default="", description="what earned trust counts it as: promote:<relation>, demote, "
                                                     "conflict or contradiction")
    counterpart: str | None = Field(
        default=None, description="the other side: a conflict's canon fact, a contradiction's rehearsed fact"
    )
    applied: tuple[MemoryState, ...] = Field(
        default=(), description="the prior states of the other memories a keep changed (a promotion revokes its slot's "
                                "fact): a revert or an undo restores them, with before, exactly"
    )
    sides: tuple[ReviewSide, ...] = Field(
        default=(), description="a conflict's or contradiction's two sides in their own words: the item's memory first"
    )


class TrustRecord(_Read):
    """An organisation's record of people's decisions on one kind of change (``GET /v1/review/trust``)."""

    change_kind: str
    kept: int = Field(description="kept by a person (automatic keeps never count)")
    rejected: int
    reverted: int = Field(description="kept, then reverted by a person")
    held: int = Field(description="kept and not reverted")
    rate: float = Field(description="held / (kept + rejected); 0 before any decision")
    auto_keep_after: int = Field(description="the character's profile's bar: held keeps needed (0: never)")
    min_keep_rate: float = Field(description="the profile's bar on the rate")
    eligible: bool = Field(description="whether this kind may ever be kept automatically (the profile's trust.kinds)")
    earned: bool = Field(description="whether the sweep now keeps changes of this kind itself")


# -- the whole recall (detail="full"), for debugging and evaluation -------------------------------------------------


class ScoreComponents(_Read):
    """Every factor of a memory's stage-two score, so a ranking explains itself."""

    relevance: float = Field(description="stage one's fused relevance of the vector and lexical legs, 0 .. 1")
    salience: float = Field(description="trace intensity decayed by age (emotional) or the flat factual weight")
    salience_weight: float = Field(description="the multiplier salience contributes: base + (1 - base) * salience")
    anchor_boost: float = Field(description="1 when no anchor matched, the profile's boost when one did")
    strength: float = Field(
        default=1.0,
        description="the strength factor: 1 - w + w * the memory's live strength (w: the profile's "
                    "strength.ranking_weight), times strength.stale_weight for a stale memory",
    )
    scope_weight: float = Field(
        default=1.0, description="its level's weight (the profile's scopes.user_weight, canon_weight or shared_weight)"
    )
    age_days: float = Field(description="days from when it was said to the recall's time")
    half_life_days: float = Field(
        description="the salience half-life used: grows with intensity squared (emotional), or the long factual one"
    )
    score: float = Field(
        description="relevance * salience_weight * anchor_boost * strength * scope_weight: memories are ranked by it "
                    "(then diversified when the profile's scopes.mmr_lambda is below 1)"
    )


class RecalledMemory(_Read):
    memory_id: str = Field(description="the memory's id: GET or DELETE /v1/memories/{memory_id}")
    text: str = Field(description="what the user said (a fact: its sentence; a canon record: its text)")
    context: str = Field(
        description="the character's turn right before it, which it answered; empty when there was none (a fact, "
                    "or a turn after another user turn or first in its session)"
    )
    session_id: str = Field(description="the session it was said in")
    created_at: datetime = Field(description="when it was said")
    legs: tuple[Leg, ...] = Field(description="the retrieval legs that found it")
    trace: Trace | None = Field(
        description="its write-time trace, complete or pending; null without one: an atomic fact, or a turn whose "
                    "session's write-time pass has not run yet"
    )
    matched_anchors: tuple[str, ...] = Field(description="its anchors the message named (they can boost its score)")
    window_anchors: tuple[str, ...] = Field(
        default=(), description="its anchors the conversation window named but the message did not (a lower boost)"
    )
    tier: Tier = Field(
        default="standard",
        description="how relevant stage one found it, on the fused score: high (mention it freely), standard, or "
                    "low (a weak match: the best there was; mention it only if the user leads there)",
    )
    calibrated_relevance: float | None = Field(
        default=None,
        description="the probability that this is a memory a good companion would bring up, from the fused "
                    "relevance and how far it stands above the query's other matches; the tier is read from it",
    )
    relevance_lead: float | None = Field(
        default=None,
        description="how far its fused relevance stands above the median of the query's best matches (stage one)",
    )
    kind: RecordKind = Field(
        default="turn", description="turn (a user turn), fact (an atomic fact) or record (a canon document, whole)"
    )
    scope: Scope = Field(default="user", description="the memory level it came from: user, canon or shared")
    stale: bool = Field(default=False, description="it carried a fact that has since been superseded")
    components: ScoreComponents
    resolution: Resolution | None = Field(
        default=None, description="a later memory resolved its feeling: recalled as a memory, no tone rule"
    )


class ContextTrace(_Read):
    """What the character was shown on one turn, and why."""

    tokenizer: str = Field(description="what counted the tokens")
    budget_tokens: int = Field(description="the whole budget: Path A first, Path B fills the rest")
    prefix_tokens: int = Field(
        description="tokens of the stable prefix (Path A: canon, the user's facts, standing rules)"
    )
    tone_tokens: int = Field(description="tokens of this turn's tone constraints")
    tail_tokens: int = Field(description="tokens of the tail (the recalled memories)")
    prefix_sha256: str = Field(description="the stable prefix's hash: equal across turns when Path A is unchanged")
    pins: tuple[str, ...] = Field(description="canon records injected whole, in priority order")
    pins_truncated: tuple[str, ...] = Field(description="oversized pins cut at a paragraph boundary")
    facts: tuple[str, ...] = Field(description="the user's current facts injected")
    standing_rules: int = Field(description="standing rules in the prefix")
    tone_constraints: int = Field(
        description="tone constraints that fit the budget, in the system message after the prefix"
    )
    memories: tuple[str, ...] = Field(description="recalled memories injected, in rank order")
    memories_dropped: tuple[str, ...] = Field(description="recalled memories left out for the budget, lowest first")
    over_budget: bool = Field(description="Path A alone exceeded the budget (it is never dropped)")
    rehearsal: str | None = Field(
        default=None, description="the rehearsed fact whose optional check the tone part carries; null: none"
    )


class RecallTrace(_Read):
    """How a recall answered: which legs ran, how many candidates each found, where the floors cut, timings."""

    mode: RecallMode = Field(
        description="which mode answered: hybrid (normal), lexical (the embedder was down) or substring (lexical "
                    "found nothing either); anything but hybrid is a degraded answer"
    )
    legs: tuple[Leg, ...] = Field(description="the legs that found the candidates")
    vector_candidates: int = Field(
        description="memories the vector leg found at or above its threshold, over the levels searched"
    )
    lexical_candidates: int = Field(description="memories the lexical (BM25) leg matched, over the levels searched")
    fused_candidates: int = Field(
        description="the candidates stage two ranked: stage one's fused hits over the floors, facts no longer "
                    "current left out"
    )
    dropped_below_floor: int = Field(
        description="hits of either leg left out: their fused relevance was under the floor"
    )
    excluded_current_session: int = Field(
        description="memories of the current session left out (include_current_session was false)"
    )
    window_turns: int = Field(default=0, description="lines of the conversation window the query read")
    window_source: WindowSource = Field(
        default="none", description="where the window came from: the request, or the session's stored turns"
    )
    vector_threshold: float | None = Field(
        default=None, description="the cosine a vector hit needed on this query (relative when every match is weak)"
    )
    fused_floor: float | None = Field(default=None, description="the fused relevance a hit needed on this query")
    standing_rule_memories: int = Field(description="memories behind the standing rules in force")
    resolved_tone_memories: int = Field(
        default=0, description="memories that would carry a tone rule but were resolved by a later memory"
    )
    timings_ms: dict[str, float] = Field(
        description="milliseconds per step: embed_ms, stage_one_ms, stage_two_ms, tone_and_context_ms, total_ms"
    )
    profile_version: int = Field(description="the character's tuning version that ranked it")
    notes: tuple[str, ...] = Field(default=(), description="why an answer was degraded or changed, for a person")
    context: ContextTrace | None = Field(
        default=None,
        description="what the character was shown, and why: the token budget, what went in, what was left out",
    )
    rehearsal_due: int = Field(default=0, description="the user's rehearsed facts due a check")
    rehearsal_note: str = Field(
        default="", description="why no check was offered though one was due (one this session already, the cadence)"
    )


class RecallResult(_Read):
    """The whole recall: each memory's write-time trace and score components, and the recall's full trace."""

    recall_id: str = Field(default="", description="look the turn up later: GET /v1/recalls/{recall_id}")
    memories: tuple[RecalledMemory, ...] = Field(
        description="the recalled memories, best first, each with its write-time trace and score components"
    )
    tone_constraints: tuple[ToneConstraint, ...] = Field(description="from this turn's recalled memories")
    standing_rules: tuple[ToneConstraint, ...] = Field(description="in force whatever was recalled")
    resolutions: tuple[Resolution, ...] = Field(
        default=(), description="resolutions that kept a recalled memory's (or a would-be standing rule's) tone out "
                                "of force this turn",
    )
    rehearsal: RehearsalCue | None = Field(default=None, description="this turn's optional check of a rehearsed fact")
    context: AssembledContext
    trace: RecallTrace

    @property
    def tone_in_force(self) -> tuple[ToneConstraint, ...]:
        return self.tone_constraints + self.standing_rules
