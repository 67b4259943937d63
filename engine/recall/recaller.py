"""The recall use case, per turn: stage one, fact currency, stage two, tone rules, Path A and the context."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

from engine import rehearsal
from engine.domain.models import (
    Memory,
    MemoryState,
    Partition,
    RecallQuery,
    RecallResult,
    RecallTrace,
    RehearsalCue,
    Resolution,
    ToneConstraint,
)
from engine.domain.ports import Embedder, MemoryStore, Profiles, ToneCandidates
from engine.domain.text import terms
from engine.domain.tuning import TuningProfile
from engine.recall import path_a, stage_two
from engine.recall.stage_one import StageOne
from engine.recall.tone import ToneRules
from engine.telemetry import span
from prompts.context import Budget, assemble
from prompts.tokens import TokenCounter, default_counter
from prompts.wording import rehearsal_cue

log = logging.getLogger("feltsense.recall")
Resolutions = Callable[[Partition, datetime], dict[str, Resolution]]
"""A user's resolutions in force at a time, by the memory resolved
(``engine.domain.ports.ResolutionLog.resolutions_in_force``)."""

TIER_RANK = {"low": 0, "standard": 1, "high": 2}


def told(tier: str, min_tier: str) -> bool:
    """Whether a memory of ``tier`` is told to the character when the profile's lowest told tier is ``min_tier``."""
    return TIER_RANK[tier] >= TIER_RANK[min_tier]


class Recaller:
    def __init__(
        self, *, store: MemoryStore, embedder: Embedder, profiles: Profiles, clock: Callable[[], datetime],
        counter: TokenCounter | None = None, resolutions: Resolutions | None = None,
    ) -> None:
        self._counter = counter or default_counter()
        self._resolutions = resolutions
        self._stage_one = StageOne(index=store, turns=store, embedder=embedder)
        self._tone = ToneRules(memories=store, traces=store)
        self._store = store
        self._profiles = profiles
        self._clock = clock

    def recall(self, query: RecallQuery) -> RecallResult:
        with span("feltsense.recall", {"feltsense.window_lines": len(query.window or ())}) as current:
            result = self._recall(query)
            current.set_attributes({"feltsense.mode": result.trace.mode, "feltsense.memories": len(result.memories),
                                    "feltsense.tone_constraints": len(result.tone_constraints),
                                    "feltsense.standing_rules": len(result.standing_rules),
                                    "feltsense.profile_version": result.trace.profile_version})
            return result

    def _recall(self, query: RecallQuery) -> RecallResult:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        notes: list[str] = []
        profile = self._profiles.profile_for(query.character_id)
        partition = Partition(character_id=query.character_id, user_id=query.user_id)
        now = query.at or self._clock()
        exclude = None if query.include_current_session else query.session_id

        with span("feltsense.recall.embed"):
            window, window_source = self._stage_one.window(query, partition, profile, now)
            line_terms = [terms(t.text) for t in window]
            search, mode = self._stage_one.query(query, window, line_terms, profile, notes)
        timings["embed_ms"] = (time.perf_counter() - started) * 1000

        mark = time.perf_counter()
        with span("feltsense.recall.stage_one") as stage:
            searched = self._stage_one.search(query, search, mode, profile, now, exclude, notes)
            candidates, mode, counts, own = searched.candidates, searched.mode, searched.counts, searched.own
            stage.set_attributes({"feltsense.mode": mode, "feltsense.candidates": len(candidates)})
        timings["stage_one_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        with span("feltsense.recall.stage_two") as stage:
            listings: path_a.FactListings = {}
            ids = [c.memory_id for c in candidates]
            memories = {m.memory_id: m for m in self._store.get_memories(ids)}
            states = self._store.get_states(ids)
            candidates, memories, states = path_a.current_facts_only(self._store, query.character_id, candidates,
                                                                     memories, states, notes, listings,
                                                                     user_id=query.user_id)
            traces = self._store.get_traces([c.memory_id for c in candidates])
            toned_found, resolved = self._tone_inputs(partition, profile, now)
            recalled, toned = stage_two.stage_two(
                self._store, query, candidates, memories, traces, now, profile, limit=query.limit, states=states,
                resolved=resolved, tone_candidates=toned_found,
                window_terms=frozenset(t for line in line_terms for t in line),
                term_stats=(searched.frequency, searched.documents))
            stage.set_attribute("feltsense.memories", len(recalled))
        timings["stage_two_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        with span("feltsense.recall.tone") as stage:
            tone_constraints, standing_rules, standing_count, resolved_count = self._tone.rules(
                toned_found, {memory.memory_id for memory, _, _ in toned}, now, exclude, profile, resolved
            )
            stage.set_attributes({"feltsense.tone_constraints": len(tone_constraints),
                                  "feltsense.standing_rules": len(standing_rules)})
        with span("feltsense.recall.context") as stage:
            pins, facts = path_a.path_a(self._store, query.character_id, query.user_id, now, listings)
            in_prefix = {m.memory_id for m in (*pins, *facts)}
            choice, cue = self._rehearsal(partition, facts, listings, now, query.session_id, profile)
            context, context_trace = assemble(
                pins=pins, facts=facts, standing_rules=standing_rules, tone_constraints=tone_constraints,
                memories=[m for m in recalled
                          if m.memory_id not in in_prefix and told(m.tier, profile.context.min_tier)],
                now=now,
                budget=Budget(total_tokens=profile.context.budget_tokens,
                              max_pin_tokens=profile.context.max_pin_tokens),
                counter=self._counter,
                rehearsal=None if cue is None else (cue.memory_id, cue.instruction),
            )
            if cue is not None and context_trace.rehearsal is None:
                cue = None  # it did not fit the budget: not offered, so not marked as offered
            if cue is not None:
                self._offered(cue, listings[partition][1][cue.memory_id], now, query.session_id or "", profile)
            stage.set_attribute("feltsense.context_tokens", context_trace.prefix_tokens + context_trace.tone_tokens
                               + context_trace.tail_tokens)
        timings["tone_and_context_ms"] = (time.perf_counter() - mark) * 1000
        timings["total_ms"] = (time.perf_counter() - started) * 1000

        trace = RecallTrace(
            mode=mode,
            legs=tuple(sorted({leg for c in candidates for leg in c.legs})),
            vector_candidates=counts.get("vector", 0),
            lexical_candidates=counts.get("lexical", 0),
            fused_candidates=len(candidates),
            dropped_below_floor=counts.get("dropped_below_floor", 0),
            excluded_current_session=counts.get("excluded_current_session", 0),
            window_turns=len(window),
            window_source=window_source,
            vector_threshold=None if own is None else own.vector_threshold,
            fused_floor=None if own is None else own.fused_floor,
            standing_rule_memories=standing_count,
            resolved_tone_memories=resolved_count,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
            profile_version=profile.version,
            notes=tuple(notes),
            context=context_trace,
            rehearsal_due=choice.due,
            rehearsal_note=choice.note,
        )
        if mode != "hybrid":
            log.warning("recall answered in %s mode for %s/%s", mode, query.character_id, query.user_id)
        return RecallResult(
            recall_id="rc_" + uuid.uuid4().hex,
            memories=tuple(recalled),
            tone_constraints=tone_constraints,
            standing_rules=standing_rules,
            resolutions=tuple(dict.fromkeys(m.resolution for m in recalled if m.resolution is not None)),
            rehearsal=cue,
            context=context,
            trace=trace,
        )

    def _rehearsal(self, partition: Partition, facts: Sequence[Memory], listings: path_a.FactListings,
                   now: datetime, session_id: str | None, profile: TuningProfile
                   ) -> tuple[rehearsal.CueChoice, RehearsalCue | None]:
        """This turn's optional check of a rehearsed fact, if one is due and the session and cadence allow."""
        states = listings[partition][1] if partition in listings else {}
        choice = rehearsal.choose_cue(facts, states, now, session_id, profile.rehearsal)
        fact = choice.fact
        if fact is None:
            return choice, None
        plan = states[fact.memory_id].rehearsal
        assert plan is not None
        return choice, RehearsalCue(memory_id=fact.memory_id, reason=plan.reason, box=plan.box, due=plan.due,
                                    instruction=rehearsal_cue(plan.reason, fact.text))

    def _offered(self, cue: RehearsalCue, state: MemoryState, now: datetime, session_id: str,
                 profile: TuningProfile) -> None:
        """Mark the check offered (the one write a recall makes, at most once a session): not again this session,
        and not due again before its box's wait."""
        assert state.rehearsal is not None
        self._store.put_states([state.model_copy(update={
            "rehearsal": rehearsal.cued(state.rehearsal, now, session_id, profile.rehearsal)})])

    def standing_rules(self, partition: Partition, now: datetime) -> tuple[ToneConstraint, ...]:
        """The standing tone rules in force for a user at ``now``, whatever a turn would recall: what a recall's
        ``standing_rules`` would hold if it recalled nothing (a tone rule for a recalled memory is that turn's)."""
        with span("feltsense.standing_rules"):
            profile = self._profiles.profile_for(partition.character_id)
            found, resolved = self._tone_inputs(partition, profile, now)
            return self._tone.rules(found, set(), now, None, profile, resolved)[1]

    def _tone_inputs(self, partition: Partition, profile: TuningProfile, now: datetime
                     ) -> tuple[ToneCandidates, dict[str, Resolution]]:
        """The partition's tone candidates under the profile's bars, and the resolutions in force at ``now``."""
        found = self._store.tone_candidates(
            partition, min_intensity=profile.tone.min_intensity, max_valence=profile.tone.max_valence)
        return found, self._resolutions(partition, now) if self._resolutions is not None else {}

    def remember_lines(self, lines: Sequence[str], vectors: np.ndarray) -> None:
        """Keep lines' vectors for the windows of the next turns (ingest tells recall what it embedded)."""
        self._stage_one.remember_lines(lines, vectors)

