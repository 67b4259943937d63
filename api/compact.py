"""The compact recall: what a character runtime reads each turn (the default answer of ``POST /v1/recall`` and
``GET /v1/recalls/{id}``), made from the engine's whole ``RecallResult``.

It is a view for the wire, so it is made here, straight into the wire models: the full answer (``detail=full``)
repeats each memory's write-time trace, its legs and its score components, which explain a ranking to a person and
which no runtime reads. The API rounds every float it sends to 4 decimal places (``api.boundary.FLOAT_DECIMALS``),
in both answers; the engine ranks on the exact values.
"""

from __future__ import annotations

from feltsense_client.models import (
    AssembledContext,
    CompactMemory,
    CompactRecall,
    CompactRecallTrace,
    CompactToneRule,
    Feeling,
    RehearsalCue,
)

from api.wire import to_wire
from engine.domain.models import RecalledMemory, RecallResult, ToneConstraint, TraceStatus


def compact_memory(memory: RecalledMemory) -> CompactMemory:
    """One recalled memory in brief; its feeling only once its write-time trace is complete."""
    trace = memory.trace if memory.trace is not None and memory.trace.status is TraceStatus.COMPLETE else None
    return CompactMemory(
        memory_id=memory.memory_id, text=memory.text, created_at=memory.created_at,
        session_id=memory.session_id, scope=memory.scope, tier=memory.tier,
        calibrated_relevance=memory.calibrated_relevance, score=memory.components.score, stale=memory.stale,
        feeling=None if trace is None else Feeling(register=trace.register, valence=trace.valence,
                                                   intensity=trace.intensity),
    )


def compact_rule(constraint: ToneConstraint) -> CompactToneRule:
    return CompactToneRule(register=constraint.register, anchors=constraint.anchors,
                           instruction=constraint.instruction, standing=constraint.standing,
                           anniversary_years=constraint.anniversary_years, intensity=constraint.intensity)


def compact_recall(result: RecallResult) -> CompactRecall:
    """The recall a runtime reads: ``context`` to show the character, and the rules and memories it was made of."""
    return CompactRecall(
        recall_id=result.recall_id, context=to_wire(AssembledContext, result.context),
        tone_constraints=tuple(compact_rule(c) for c in result.tone_constraints),
        standing_rules=tuple(compact_rule(c) for c in result.standing_rules),
        memories=tuple(compact_memory(m) for m in result.memories),
        rehearsal=None if result.rehearsal is None else to_wire(RehearsalCue, result.rehearsal),
        trace=CompactRecallTrace(mode=result.trace.mode, profile_version=result.trace.profile_version,
                                 notes=result.trace.notes),
    )
