"""Canned engine answers for the transcript tests: a small fake engine that records every call and answers recall
with results built from the real ``engine.domain.models``, so the tests pin the runner's side of the contract
without any model or store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from engine.domain.models import (
    AssembledContext,
    CloseReport,
    IngestReport,
    Leg,
    RecalledMemory,
    RecallQuery,
    RecallResult,
    RecallTrace,
    Register,
    ScoreComponents,
    ToneConstraint,
    Trace,
    TraceStatus,
    Turn,
)
from tests.sessions import LUNA_TRANSCRIPT_HEAD

START = datetime(2025, 3, 2, 18, tzinfo=UTC)

LUNA = LUNA_TRANSCRIPT_HEAD + """\
      - character: "I'm so sorry."
        at: "+45s"
      - user: "She was fourteen."
  - at: "+9d"
    turns:
      - user: "I went for a walk in the park."
        probe:
          recall_any: [Luna]
      - character: "How was it?"
      - user: "Quiet."
        at: "+2m"
        probe:
          no_tone: any
"""


# -- canned engine answers ----------------------------------------------------------------------------------


def memory(text: str, *, register: Register | None = None, anchors: tuple[str, ...] = ()) -> RecalledMemory:
    trace = None
    if register is not None:
        trace = Trace(
            memory_id=f"m-{text[:8]}",
            status=TraceStatus.COMPLETE,
            register=register,
            intensity=0.8,
            anchors=anchors,
            written_at=START,
        )
    return RecalledMemory(
        memory_id=f"m-{text[:8]}",
        text=text,
        context="",
        session_id="luna:s0",
        created_at=START,
        legs=(Leg.VECTOR, Leg.LEXICAL),
        trace=trace,
        matched_anchors=anchors,
        components=ScoreComponents(
            relevance=0.8125,
            salience=0.5,
            salience_weight=0.75,
            anchor_boost=1.3,
            age_days=9.0,
            half_life_days=30.0,
            score=0.7922,
        ),
    )


def tone(
    register: Register,
    anchors: tuple[str, ...] = (),
    instruction: str = "Be gentle.",
    *,
    standing: bool = False,
) -> ToneConstraint:
    return ToneConstraint(
        register=register,
        anchors=anchors,
        instruction=instruction,
        source_memory_ids=("m-1",),
        standing=standing,
        intensity=0.8,
        valence=-0.7,
    )


def recall_result(
    memories: Sequence[RecalledMemory] = (),
    tone_constraints: Sequence[ToneConstraint] = (),
    standing_rules: Sequence[ToneConstraint] = (),
    *,
    system: str = "",
    tail: str = "",
) -> RecallResult:
    return RecallResult(
        memories=tuple(memories),
        tone_constraints=tuple(tone_constraints),
        standing_rules=tuple(standing_rules),
        context=AssembledContext(prefix=system, tone="", tail=tail),
        trace=RecallTrace(
            mode="hybrid",
            legs=(Leg.VECTOR, Leg.LEXICAL),
            vector_candidates=len(memories),
            lexical_candidates=len(memories),
            fused_candidates=len(memories),
            dropped_below_floor=0,
            excluded_current_session=0,
            standing_rule_memories=len(standing_rules),
            timings_ms={"total": 1.0},
            profile_version=1,
        ),
    )


class FakeEngine:
    """Records every call in order; recall answers from ``answer`` (an empty result by default)."""

    def __init__(self, answer: Callable[[RecallQuery], RecallResult] | None = None) -> None:
        self.calls: list[tuple[str, object]] = []
        self.stored: list[Turn] = []
        self.closed = False
        self.answer = answer or (lambda query: recall_result())

    def ingest(self, turns: Sequence[Turn]) -> IngestReport:
        self.calls.append(("ingest", tuple(turns)))
        self.stored.extend(turns)
        return IngestReport(
            stored=len(turns), duplicates=0, memories=sum(turn.role == "user" for turn in turns)
        )

    def close_session(self, session_id: str, *, closed_at: datetime | None = None) -> CloseReport:
        self.calls.append(("close_session", (session_id, closed_at)))
        return CloseReport(session_id=session_id, traces_written=0, traces_pending=0)

    def recall(self, query: RecallQuery) -> RecallResult:
        self.calls.append(("recall", query))
        return self.answer(query)

    def close(self) -> None:
        self.closed = True


def luna_recall(query: RecallQuery) -> RecallResult:
    return recall_result([memory("My dog Luna died last week.", register="grief", anchors=("Luna",))])



GRIEF_LUNA = tone("grief", ("Luna",), "Be gentle about her dog.")
STANDING_GRIEF = tone("grief", ("dog",), "Never be cheerful about Luna.", standing=True)
JOY_COFFEE = tone("joy", ("coffee",), "Keep it light.")
STANDING_JOY = tone("joy", ("coffee",), "Keep it light.", standing=True)
LUNA_MEMORY = memory("My dog Luna died last week.")
LEEDS_MEMORY = memory("I live in Leeds, the rain is relentless.")
