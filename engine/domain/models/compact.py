"""The compact recall: what a character runtime reads each turn (the default answer of ``POST /v1/recall``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from engine.domain.models.recall import (
    AssembledContext,
    RecalledMemory,
    RecallMode,
    RecallResult,
    Tier,
    ToneConstraint,
)
from engine.domain.models.records import (
    Frozen,
    Register,
    Scope,
    TraceStatus,
)

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
