"""Recall, per turn: stage one (hybrid retrieval, up to 40), stage two (deterministic rerank to 6), tone rules.

Degradation is recorded, never silent: if the embedder fails, stage one runs lexical only; if that finds
nothing, plain substring matching answers. The result's trace says which mode answered.

A memory a later one resolved (``traces.resolution``; the ledger's resolutions in force at the turn's time) is
not toned: no tone constraint, no standing rule, and it ranks as an ordinary memory. Recall says so on the
memory (``RecalledMemory.resolution``) and in ``RecallResult.resolutions``.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

import numpy as np

from engine.domain.models import (
    Candidate,
    Memory,
    MemoryKind,
    MemoryState,
    Partition,
    RecalledMemory,
    RecallMode,
    RecallQuery,
    RecallResult,
    RecallTrace,
    Resolution,
    ScoreComponents,
    ToneConstraint,
    Trace,
    TraceStatus,
    WindowTurn,
)
from engine.domain.ports import Embedder, MemoryStore, ToneCandidates
from engine.domain.scopes import CANON, partition_for, visible
from engine.domain.text import anchor_key, matched_anchors, terms
from engine.domain.tuning import ProfileSource, TuningProfile
from engine.facts import current
from engine.retrieval import Query, Ranked, query_vector, rank, weighted_terms
from prompts.context import Budget, assemble
from prompts.tokens import TokenCounter, default_counter
from prompts.wording import anniversary_years_ago, tone_instruction
from scoring import strength as strength_kernel
from scoring.mmr import mmr
from scoring.rerank import StageTwoParams, salience_for, stage_two

log = logging.getLogger("feltsense.recall")
SECONDS_PER_DAY = 86400.0
MMR_POOL_FACTOR = 3
REGISTER_CACHE_SIZE = 100_000
LINE_CACHE_SIZE = 4096
WindowSource = Literal["none", "passed", "stored"]
TermStats = tuple[dict[str, float], int]
"""Stage one's document frequency per query term, and the memories its legs counted, over the levels searched."""

FactListings = dict[Partition, tuple[list[Memory], dict[str, MemoryState]]]
Resolutions = Callable[[Partition, datetime], dict[str, Resolution]]
"""A user's resolutions in force at a time, by the memory resolved (``engine.ledger.Ledger.resolutions_in_force``)."""


@functools.lru_cache(maxsize=256)
def stage_two_params(profile: TuningProfile, limit: int | None = None) -> StageTwoParams:
    """The kernel's parameters from a (frozen, hashable) profile; cached, since recall asks every turn."""
    scoring = profile.scoring
    return StageTwoParams(
        limit=scoring.result_limit if limit is None else limit,
        per_intensity_squared=scoring.half_life_days_per_intensity_squared,
        min_half_life_days=scoring.min_half_life_days,
        factual_salience=scoring.factual_salience,
        factual_half_life_days=scoring.factual_half_life_days,
        salience_base=scoring.salience_base,
        anchor_boost=scoring.anchor_boost,
        anchor_feeling_share=scoring.anchor_feeling_share,
        tone_min_intensity=profile.tone.min_intensity,
        tone_max_valence=profile.tone.max_valence,
        standing_rule_salience=profile.tone.standing_rule_salience,
        standing_min_intensity=profile.tone.standing_min_intensity,
    )


@functools.lru_cache(maxsize=256)
def strength_params(profile: TuningProfile) -> strength_kernel.StrengthParams:
    return strength_kernel.StrengthParams(**profile.strength.model_dump(exclude={"ranking_weight"}))


def strengths(
    memories: Sequence[Memory], states: dict[str, MemoryState], now: datetime, profile: TuningProfile, *,
    with_stale: bool = True,
) -> np.ndarray:
    """The live strength scalar of each memory, from its stored signal vector (scoring.strength).
    ``with_stale=False`` leaves the stale multiplier out, for a caller that applies it itself."""
    rows = [states.get(m.memory_id) or MemoryState(memory_id=m.memory_id) for m in memories]
    validated = [
        (s.signals.last_validated or m.created_at).timestamp() for m, s in zip(memories, rows, strict=True)
    ]
    return strength_kernel.strength(
        now_epoch=now.timestamp(),
        last_validated_epoch=np.array(validated, dtype=np.float64),
        retrievals=np.array([s.signals.retrievals for s in rows], dtype=np.float64),
        query_kinds=np.array([len(s.signals.query_kinds) for s in rows], dtype=np.float64),
        confidence=np.array([s.signals.confidence for s in rows], dtype=np.float64),
        source_trust=np.array([strength_kernel.source_trust_of(s.signals.source) for s in rows], dtype=np.float64),
        # The protected class: canon, and atomic facts (a fact is outdated by supersession, not by age).
        canon=np.array([m.scope == "canon" or m.kind == "fact" for m in memories], dtype=bool),
        pinned=np.array([s.pinned for s in rows], dtype=bool),
        stale=np.array([with_stale and s.stale for s in rows], dtype=bool),
        params=strength_params(profile),
    )


def anchor_matrix(
    matches: Sequence[tuple[str, ...]], window_matches: Sequence[tuple[str, ...]] = (), *, window_weight: float = 1.0
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Candidates x the distinct anchors the message (or the window) named, case-folded: which candidate carries
    which, each anchor's weight (1 when the message named it for any candidate, else ``window_weight``), and the
    anchors (case-folded) in column order."""
    rows = [(*found, *(window_matches[i] if i < len(window_matches) else ())) for i, found in enumerate(matches)]
    columns = {key: j for j, key in enumerate(dict.fromkeys(a.casefold() for found in rows for a in found))}
    matrix = np.zeros((len(rows), len(columns)), dtype=bool)
    for i, found in enumerate(rows):
        for anchor in found:
            matrix[i, columns[anchor.casefold()]] = True
    said = {a.casefold() for found in matches for a in found}
    weights = np.array([1.0 if key in said else window_weight for key in columns])
    return matrix, weights, list(columns)


def anchor_rarity(anchors: Sequence[str], stats: TermStats | None) -> np.ndarray | None:
    """Each anchor's rarity in the partitions searched, ln(N / df) / ln(N), its df the smallest document frequency
    among its terms (stage one's statistics; an anchor with a term stage one did not search for counts as rare)."""
    if stats is None:
        return None
    frequency, documents = stats
    if documents <= 1:
        return None
    rarity = []
    for anchor in anchors:
        found = [frequency[t] for t in anchor_key(anchor) if t in frequency]
        df = max(min(found), 1.0) if found else 1.0
        rarity.append(math.log(documents / df) / math.log(documents))
    return np.clip(np.array(rarity, dtype=np.float64), 0.0, 1.0)


TIER_RANK = {"low": 0, "standard": 1, "high": 2}


def told(tier: str, min_tier: str) -> bool:
    """Whether a memory of ``tier`` is told to the character when the profile's lowest told tier is ``min_tier``."""
    return TIER_RANK[tier] >= TIER_RANK[min_tier]


def standing_bar(profile: TuningProfile, register: str) -> float:
    """The intensity a decayed toned memory of ``register`` needs to stand as a rule: the tone bar for a loss, the
    standing bar for the other standing registers, never (infinity) for the rest."""
    tone = profile.tone
    if register in tone.loss_registers:
        return tone.min_intensity
    if register in tone.standing_registers:
        return max(tone.standing_min_intensity, tone.min_intensity)
    return float("inf")


def episode_intensity(found: ToneCandidates, memory_ids: Sequence[str]) -> dict[str, float]:
    """For each of ``memory_ids`` among ``found``, the intensity of its episode's most intense memory."""
    row = {memory_id: i for i, memory_id in enumerate(found.memory_ids)}
    rows = [row[m] for m in memory_ids if m in row]
    if not rows:
        return {}
    lead = {int(key): float(found.intensity[found.episode == key].max()) for key in np.unique(found.episode[rows])}
    return {m: lead[int(found.episode[row[m]])] for m in memory_ids if m in row}


class Recaller:
    def __init__(
        self, *, store: MemoryStore, embedder: Embedder, profiles: ProfileSource, clock: Callable[[], datetime],
        counter: TokenCounter | None = None, resolutions: Resolutions | None = None,
    ) -> None:
        self._counter = counter or default_counter()
        self._resolutions = resolutions
        self._register_cache: dict[str, str] = {}
        self._line_vectors: dict[str, np.ndarray] = {}  # the window lines' vectors, oldest entry dropped first
        self._store = store
        self._embedder = embedder
        self._profiles = profiles
        self._clock = clock

    def recall(self, query: RecallQuery) -> RecallResult:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        notes: list[str] = []
        profile = self._profiles.profile_for(query.character_id)
        partition = Partition(character_id=query.character_id, user_id=query.user_id)
        now = query.at or self._clock()
        exclude = None if query.include_current_session else query.session_id

        window, window_source = self._window(query, partition, profile, now)
        line_terms = [terms(t.text) for t in window]
        query_terms, term_weights = weighted_terms(terms(query.message), line_terms, profile.retrieval)
        mode: RecallMode = "hybrid"
        message_vector, window_vectors = None, None
        try:
            message_vector, window_vectors = self._vectors(query.message, window, profile)
        except Exception as exc:  # any embedder failure degrades to lexical; the trace and the log say so
            mode = "lexical"
            notes.append(f"embedder failed ({type(exc).__name__}: {exc}); answered without the vector leg")
            log.warning("recall degraded to lexical for %s/%s: %s", query.character_id, query.user_id, exc)
        vector, scale = query_vector(message_vector, window_vectors, profile.retrieval)
        search = Query(vector=vector, cosine_scale=scale, terms=query_terms, term_weights=term_weights)
        timings["embed_ms"] = (time.perf_counter() - started) * 1000

        mark = time.perf_counter()
        levels = visible(query.character_id, query.user_id)
        candidates: list[Candidate] = []
        counts: dict[str, int] = {}
        own: Ranked | None = None  # the user's own level, searched first: its floors go in the trace
        frequency: dict[str, float] = {}
        documents = 0
        for _, level in levels:  # filters before ranking: each level is searched for what this user may see
            legs = self._store.search(
                level, query_vector=vector, query_terms=query_terms, params=profile.retrieval,
                exclude_session=exclude, created_before=now, term_weights=term_weights.tolist(),
            )
            ranked = rank(legs, search, profile.retrieval)
            if own is None:
                own = ranked
            documents += legs.documents
            for term, df in zip(query_terms, legs.document_frequency.tolist(), strict=True):
                frequency[term] = frequency.get(term, 0.0) + df
            candidates.extend(ranked.candidates)
            for key, value in (("vector", ranked.vector), ("lexical", ranked.lexical),
                               ("dropped_below_floor", ranked.dropped_below_floor),
                               ("excluded_current_session", ranked.excluded_current_session)):
                counts[key] = counts.get(key, 0) + value
        if mode == "lexical" and not candidates:
            mode = "substring"
            for _, level in levels:
                candidates.extend(self._store.substring_search(
                    level, query_text=query.message, limit=profile.retrieval.candidates,
                    exclude_session=exclude, created_before=now,
                ))
            notes.append("lexical leg found nothing; answered by substring matching")
        candidates.sort(key=lambda c: -c.relevance)  # stable: ties keep level order, narrowest first
        candidates = candidates[: profile.retrieval.candidates]
        timings["stage_one_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        listings: FactListings = {}
        ids = [c.memory_id for c in candidates]
        memories = {m.memory_id: m for m in self._store.get_memories(ids)}
        states = self._store.get_states(ids)
        candidates, memories, states = self._current_facts_only(query.character_id, candidates, memories, states,
                                                                    notes, listings)
        traces = self._store.get_traces([c.memory_id for c in candidates])
        resolved = self._resolutions(partition, now) if self._resolutions is not None else {}
        toned_found = self._store.tone_candidates(
            partition, min_intensity=profile.tone.min_intensity, max_valence=profile.tone.max_valence
        )
        recalled, toned = self.stage_two(query, candidates, memories, traces, now, profile, limit=query.limit,
                                         states=states, resolved=resolved, tone_candidates=toned_found,
                                         window_terms=frozenset(t for line in line_terms for t in line),
                                         term_stats=(frequency, documents))
        timings["stage_two_ms"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        tone_constraints, standing_rules, standing_count, resolved_count = self._tone(
            toned_found, {memory.memory_id for memory, _, _ in toned}, now, exclude, profile, resolved
        )
        pins, facts = self._path_a(query.character_id, query.user_id, now, listings)
        in_prefix = {m.memory_id for m in (*pins, *facts)}
        context, context_trace = assemble(
            pins=pins, facts=facts, standing_rules=standing_rules, tone_constraints=tone_constraints,
            memories=[m for m in recalled if m.memory_id not in in_prefix and told(m.tier, profile.context.min_tier)],
            now=now,
            budget=Budget(total_tokens=profile.context.budget_tokens, max_pin_tokens=profile.context.max_pin_tokens),
            counter=self._counter,
        )
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
        )
        if mode != "hybrid":
            log.warning("recall answered in %s mode for %s/%s", mode, query.character_id, query.user_id)
        return RecallResult(
            recall_id="rc_" + uuid.uuid4().hex,
            memories=tuple(recalled),
            tone_constraints=tone_constraints,
            standing_rules=standing_rules,
            resolutions=tuple(dict.fromkeys(m.resolution for m in recalled if m.resolution is not None)),
            context=context,
            trace=trace,
        )

    def _window(
        self, query: RecallQuery, partition: Partition, profile: TuningProfile, now: datetime
    ) -> tuple[list[WindowTurn], WindowSource]:
        """The conversation's last ``window_turns`` lines before the message: the request's when it passed them,
        else the current session's stored turns up to the turn's time (only this user's, with this character; the
        message itself left out when the runtime stored it first)."""
        size = profile.retrieval.window_turns
        if size == 0 or query.window == ():
            return [], "none"
        if query.window is not None:
            return list(query.window[-size:]), "passed"
        if query.session_id is None:
            return [], "none"
        turns = [t for t in self._store.get_turns(query.session_id)
                 if t.character_id == partition.character_id and t.user_id == partition.user_id
                 and t.timestamp <= now]
        if turns and turns[-1].role == "user" and turns[-1].text.strip() == query.message.strip():
            turns = turns[:-1]
        lines = [WindowTurn(role=t.role, text=t.text) for t in turns[-size:]]
        return lines, "stored" if lines else "none"

    def _vectors(
        self, message: str, window: Sequence[WindowTurn], profile: TuningProfile
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The message's vector and the window lines'. Lines come from a small cache of what was embedded before
        (earlier messages, and the lines ingest embedded); any other line is embedded in the message's call."""
        lines = [t.text for t in window] if profile.retrieval.window_vector_weight > 0.0 else []
        cache = self._line_vectors
        missing = list(dict.fromkeys(line for line in lines if line not in cache and line != message))
        rows = self._embedder.embed([message, *missing])
        # The message is the next turn's window line: remembered with the lines.
        self.remember_lines([message, *missing], rows)
        if not lines:
            return rows[0], None
        return rows[0], np.stack([cache.get(line, rows[0]) for line in lines])

    def remember_lines(self, lines: Sequence[str], vectors: np.ndarray) -> None:
        """Keep lines' vectors for the windows of the next turns (ingest tells recall what it embedded); the oldest
        entry goes first once the cache is full."""
        cache = self._line_vectors
        for line, row in zip(lines, vectors, strict=True):
            if line not in cache and len(cache) >= LINE_CACHE_SIZE:
                cache.pop(next(iter(cache)), None)
            cache[line] = row

    def _fact_listing(
        self, partition: Partition, listings: FactListings
    ) -> tuple[list[Memory], dict[str, MemoryState]]:
        """A partition's facts with their states, read once per recall: stage two and Path A both need them."""
        found = listings.get(partition)
        if found is None:
            facts = self._store.list_facts(partition)
            found = listings[partition] = (facts, self._store.get_states([f.memory_id for f in facts]))
        return found

    def _path_a(
        self, character_id: str, user_id: str, now: datetime, listings: FactListings
    ) -> tuple[list[Memory], list[Memory]]:
        """Path A's records, by exact lookup (no search): the character's canon (pinned canon records, then the
        current canon facts) and the user's current facts. Nothing later than ``now``."""
        canon = partition_for("canon", character_id)
        canon_memories: list[Memory] = []
        offset = 0
        while page := self._store.list_memories(canon, offset=offset, limit=500):
            canon_memories.extend(page)
            offset += len(page)
        canon_memories = [m for m in canon_memories if m.created_at <= now]
        states = self._store.get_states([m.memory_id for m in canon_memories])
        pinned = [m for m in canon_memories if (s := states.get(m.memory_id)) is not None and s.pinned
                  and s.status == "active"]
        canon_facts = [m for m in current([m for m in canon_memories if m.kind == "fact"], states).values()
                       if m.memory_id not in {p.memory_id for p in pinned}]
        canon_facts.sort(key=lambda m: (m.created_at, m.memory_id))
        listed, listed_states = self._fact_listing(partition_for("user", character_id, user_id), listings)
        facts = list(current([f for f in listed if f.created_at <= now], listed_states).values())
        return [*sorted(pinned, key=lambda m: (m.created_at, m.memory_id)), *canon_facts], facts

    def _current_facts_only(
        self, character_id: str, candidates: list[Candidate], memories: dict[str, Memory],
        states: dict[str, MemoryState], notes: list[str], listings: FactListings,
    ) -> tuple[list[Candidate], dict[str, Memory], dict[str, MemoryState]]:
        """Facts that are not current leave; a stale memory brings the fact that replaced it; canon wins.

        A fact is current when it is the one active fact of its slot (``engine.facts.current``). A memory that
        carried a superseded fact stays findable (its feelings still matter) but it brings the current fact in
        with at least its own relevance, and its strength carries the stale weight, so the outdated chunk never
        outranks the fact. A user's or the organisation's fact on a slot the character's canon holds is left
        out: a preference can shape an answer but never override canon.
        """
        fact_partitions = {m.partition for m in memories.values() if m.kind == "fact"}
        wanted = {s.superseded_by for s in states.values() if s.stale and s.superseded_by}
        if not fact_partitions and not wanted:
            return candidates, memories, states
        fetched = {m.memory_id: m for m in self._store.get_memories([w for w in wanted if w not in memories])}
        fact_partitions |= {m.partition for m in fetched.values()}
        if any(m.kind == "fact" and m.scope != "canon" for m in memories.values()):
            fact_partitions.add(partition_for("canon", character_id))
        by_partition: dict[Partition, set[str]] = {}
        canon_slots: set[tuple[str, str]] = set()
        for part in fact_partitions:
            winners = current(*self._fact_listing(part, listings))
            by_partition[part] = {f.memory_id for f in winners.values()}
            if part.user_id == CANON:
                canon_slots |= set(winners)
        kept: list[Candidate] = []
        lift: dict[str, float] = {}
        present = {c.memory_id for c in candidates}
        for candidate in candidates:
            memory = memories.get(candidate.memory_id)
            if memory is None:
                continue
            if memory.kind == "fact":
                if candidate.memory_id not in by_partition.get(memory.partition, set()):
                    continue  # superseded (or a crash left it behind its replacement)
                if memory.scope != "canon" and memory.slot in canon_slots:
                    notes.append(f"{memory.scope} fact {memory.memory_id} left out: canon holds its slot")
                    continue
            kept.append(candidate)
            state = states.get(candidate.memory_id)
            replacement = None if state is None or not state.stale else state.superseded_by
            if replacement:
                lift[replacement] = max(lift.get(replacement, 0.0), candidate.relevance)
            if replacement and replacement not in present:
                fact = fetched.get(replacement) or memories.get(replacement)
                if fact is not None and replacement in by_partition.get(fact.partition, set()):
                    memories[replacement] = fact
                    present.add(replacement)
                    kept.append(candidate.model_copy(update={"memory_id": replacement}))
        # A current fact found on its own (say, lexically and weakly) still gets at least the relevance of the
        # stale memory that points to it.
        kept = [c.model_copy(update={"relevance": lift[c.memory_id]})
                if lift.get(c.memory_id, 0.0) > c.relevance else c for c in kept]
        if any(c.memory_id not in states for c in kept):
            states = {**states, **self._store.get_states([c.memory_id for c in kept if c.memory_id not in states])}
        kept.sort(key=lambda c: -c.relevance)
        return kept, memories, states

    def stage_two(
        self,
        query: RecallQuery,
        candidates: Sequence[Candidate],
        memories: dict[str, Memory],
        traces: dict[str, Trace],
        now: datetime,
        profile: TuningProfile,
        *,
        limit: int,
        states: dict[str, MemoryState] | None = None,
        resolved: dict[str, Resolution] | None = None,
        tone_candidates: ToneCandidates | None = None,
        window_terms: frozenset[str] = frozenset(),
        term_stats: TermStats | None = None,
    ) -> tuple[list[RecalledMemory], list[tuple[Memory, Trace, float]]]:
        """Stage two as recall runs it: arrays from the traces, anchor matching, the numpy kernel, strength and
        scope weights, then maximal marginal relevance over what ranked, and the results. ``resolved``: the
        memories a later memory resolved (not toned), by id. ``tone_candidates``: the partition's, so that the
        standing bar is held against each memory's episode (its most intense moment), as the rules are.
        ``window_terms``: the index terms of the conversation's lines before the message; an anchor only they name
        boosts at ``scoring.window_anchor_weight``. ``term_stats``: stage one's document frequencies of the query
        terms and the number of memories searched, for each anchor's rarity in the partition (``anchor_rarity``)."""
        candidates = [c for c in candidates if c.memory_id in memories]
        states = states or {}
        resolved = resolved or {}
        if not candidates:
            return [], []
        message_terms = frozenset(terms(query.message))
        said_around = window_terms | message_terms
        now_epoch = now.timestamp()
        n = len(candidates)
        complete: list[Trace | None] = []
        matches: list[tuple[str, ...]] = []
        window_matches: list[tuple[str, ...]] = []
        relevance_, intensity_, valence_, created_, emotional_ = [], [], [], [], []
        bar_: list[float] = []
        for candidate in candidates:
            relevance_.append(candidate.relevance)
            created_.append(memories[candidate.memory_id].created_at.timestamp())
            trace = traces.get(candidate.memory_id)
            if trace is None or trace.status is not TraceStatus.COMPLETE:
                trace = None  # an untraced memory ranks on relevance alone
            complete.append(trace)
            intensity_.append(trace.intensity if trace else 0.0)
            valence_.append(trace.valence if trace else 0.0)
            emotional_.append(trace is not None and trace.kind is MemoryKind.EMOTIONAL)
            bar_.append(standing_bar(profile, trace.register) if trace is not None else np.inf)
            matches.append(matched_anchors(message_terms, trace.anchors) if trace and trace.anchors else ())
            window_matches.append(
                tuple(a for a in matched_anchors(said_around, trace.anchors) if a not in matches[-1])
                if trace and trace.anchors and window_terms else ()
            )
        relevance = np.array(relevance_)
        intensity = np.array(intensity_)
        valence = np.array(valence_)
        ages = (now_epoch - np.array(created_)) / SECONDS_PER_DAY
        emotional = np.array(emotional_, dtype=bool)
        anchor_matches, anchor_weights, anchor_columns = anchor_matrix(
            matches, window_matches, window_weight=profile.scoring.window_anchor_weight)
        ordered_memories = [memories[c.memory_id] for c in candidates]
        # Strength moves the ranking within bounds: score x (1 - w + w x strength). As a full multiplier, a
        # months-old answer lost to last week's chatter by 5x whatever the question (measured on LoCoMo). A
        # memory carrying a superseded fact keeps the full stale weight on top, so it never outranks the fact.
        raw = strengths(ordered_memories, states, now, profile, with_stale=False)
        w = profile.strength.ranking_weight
        stale = np.array([(s := states.get(m.memory_id)) is not None and s.stale for m in ordered_memories], dtype=bool)
        strength = (1.0 - w + w * raw) * np.where(stale, profile.strength.stale_weight, 1.0)
        weights = {"user": profile.scopes.user_weight, "canon": profile.scopes.canon_weight,
                   "shared": profile.scopes.shared_weight}
        scope_weight = np.array([weights[m.scope] for m in ordered_memories])

        standing_intensity = intensity
        below_bar = [c.memory_id for c, level, bar in zip(candidates, intensity_, bar_, strict=True)
                     if profile.tone.min_intensity <= level < bar < np.inf]
        if tone_candidates is not None and below_bar:
            leads = episode_intensity(tone_candidates, below_bar)
            standing_intensity = np.array([max(level, leads.get(c.memory_id, 0.0))
                                           for c, level in zip(candidates, intensity_, strict=True)])
        ranked = stage_two(
            relevance, intensity, valence, ages, emotional, anchor_matches, strength, scope_weight,
            stage_two_params(profile, n), standing_bar=np.array(bar_),
            resolved=np.array([c.memory_id in resolved for c in candidates], dtype=bool),
            standing_intensity=standing_intensity, anchor_weights=anchor_weights,
            anchor_rarity=anchor_rarity(anchor_columns, term_stats),
        )
        order = ranked.order
        if profile.scopes.mmr_lambda < 1.0 and len(order) > 1:
            # Diversify after strength ranking: near-duplicates of a strong memory cannot take every slot.
            # Over the best few times the limit: diversity among the contenders, not a dive into the tail.
            order = order[: MMR_POOL_FACTOR * limit]
            vectors = self._store.get_vectors([candidates[i].memory_id for i in order.tolist()])
            order = order[mmr(ranked.score[order], vectors, limit, profile.scopes.mmr_lambda)]
        order = order[:limit]
        recalled: list[RecalledMemory] = []
        toned_selected: list[tuple[Memory, Trace, float]] = []
        for i in order.tolist():
            candidate, memory, trace = candidates[i], memories[candidates[i].memory_id], complete[i]
            recalled.append(
                RecalledMemory(
                    memory_id=memory.memory_id,
                    text=memory.text,
                    context=memory.context,
                    session_id=memory.session_id,
                    created_at=memory.created_at,
                    legs=candidate.legs,
                    trace=traces.get(memory.memory_id),
                    matched_anchors=matches[i],
                    window_anchors=window_matches[i],
                    tier=candidate.tier,
                    calibrated_relevance=candidate.calibrated_relevance,
                    relevance_lead=candidate.relevance_lead,
                    kind=memory.kind,
                    scope=memory.scope,
                    stale=bool(stale[i]),
                    components=ScoreComponents(
                        relevance=float(relevance[i]),
                        salience=float(ranked.salience[i]),
                        salience_weight=float(ranked.salience_weight[i]),
                        anchor_boost=float(ranked.anchor_boost[i]),
                        strength=float(strength[i]),
                        scope_weight=float(scope_weight[i]),
                        age_days=float(ages[i]),
                        half_life_days=float(ranked.half_life_days[i]),
                        score=float(ranked.score[i]),
                    ),
                    resolution=resolved.get(memory.memory_id),
                )
            )
            if ranked.toned[i] and trace is not None:
                toned_selected.append((memory, trace, float(ages[i])))
        return recalled, toned_selected

    def _tone(
        self,
        found: ToneCandidates,
        selected_ids: set[str],
        now: datetime,
        exclude_session: str | None,
        profile: TuningProfile,
        resolved: dict[str, Resolution] | None = None,
    ) -> tuple[tuple[ToneConstraint, ...], tuple[ToneConstraint, ...], int, int]:
        """Tone constraints for this turn's toned memories, the standing rules in force, how many memories stand
        behind those rules, and how many toned memories were left out as resolved.

        Rules speak for whole episodes (one session, one register): a recalled "Luna and I walked in the park"
        brings the episode's most intense moment ("My dog Luna died") and all of its anchors into the rule. An
        episode none of whose memories was recalled is a standing rule once its most intense memory has
        decayed below the standing threshold, if that memory clears its register's standing bar (``standing_bar``:
        the tone bar for a loss, ``standing_min_intensity`` for very intense sadness or shame, never for anxiety
        or anger); until then it simply competes for slots like any memory, and one that does not clear the bar
        decays out of force. A resolved memory is not a tone candidate at all.
        """
        tone = profile.tone
        ages = (now.timestamp() - found.created_epoch) / SECONDS_PER_DAY
        visible = ages >= 0
        if exclude_session is not None and exclude_session in found.session_ids:
            visible &= np.array([sid != exclude_session for sid in found.session_ids], dtype=bool)
        resolved_count = 0
        if resolved:
            settled = np.array([mid in resolved for mid in found.memory_ids], dtype=bool)
            resolved_count = int((visible & settled).sum())
            visible &= ~settled
        if not visible.any():
            return (), (), 0, resolved_count
        positions = np.flatnonzero(visible)
        episode, intensity, ages = found.episode[positions], found.intensity[positions], ages[positions]
        salience, _ = salience_for(intensity, ages, np.ones(len(positions), dtype=bool), stage_two_params(profile))
        # Each episode's lead is its most intense memory (the earliest among equals).
        order = np.lexsort((ages * -1.0, -intensity, episode))
        _, first = np.unique(episode[order], return_index=True)
        leads = order[first]
        selected_episodes = set()
        for memory_id in selected_ids:
            if memory_id not in found.memory_ids:
                continue
            where = found.memory_ids.index(memory_id)
            i = int(np.searchsorted(positions, where))  # positions is sorted
            if i < len(positions) and positions[i] == where:
                selected_episodes.add(int(episode[i]))
        is_selected = np.array([int(episode[i]) in selected_episodes for i in leads], dtype=bool)
        decayed = salience[leads] < tone.standing_rule_salience
        # A decayed episode is a standing rule whether or not this turn recalled it: the standing rules live in
        # the stable prefix, which must not depend on the turn's message.
        is_selected &= ~decayed
        # Only the rare moment stands: a loss, or very intense sadness or shame (``standing_bar``). The rest decays
        # out of force.
        standing_leads = leads[decayed & (intensity[leads] >= tone.min_intensity)]
        if len(standing_leads):
            registers = self._registers_of([found.memory_ids[int(positions[i])] for i in standing_leads])
            standing_leads = standing_leads[np.array(
                [float(intensity[i]) >= standing_bar(profile, registers.get(found.memory_ids[int(positions[i])], ""))
                 for i in standing_leads], dtype=bool)]
        # The system message stays bounded: the most intense standing episodes (then the most recent) win.
        standing_leads = standing_leads[np.lexsort((ages[standing_leads], -intensity[standing_leads]))]
        standing_leads = standing_leads[: tone.max_standing_rules]
        current_episodes = [int(episode[i]) for i in leads[is_selected]]
        standing_episodes = [int(episode[i]) for i in standing_leads]

        def members(key: int) -> list[int]:
            return [int(positions[i]) for i in np.flatnonzero(episode == key)]

        current_rows = [members(key) for key in current_episodes]
        standing_rows = [members(key) for key in standing_episodes]
        needed = [found.memory_ids[p] for rows in current_rows + standing_rows for p in rows]
        memories = {m.memory_id: m for m in self._store.get_memories(needed)}
        traces = self._store.get_traces(needed)

        def materialise(groups: list[list[int]]) -> list[list[tuple[Memory, Trace, float]]]:
            return [
                [(memories[mid], traces[mid], float((now - memories[mid].created_at).total_seconds()
                                                    / SECONDS_PER_DAY))
                 for p in group if (mid := found.memory_ids[p]) in memories and mid in traces]
                for group in groups
            ]

        kept = materialise(standing_rows)
        return (
            self._constraints(materialise(current_rows), standing=False),
            self._constraints(kept, standing=True, now=now, anniversary_window_days=tone.anniversary_window_days),
            sum(len(e) for e in kept),
            resolved_count,
        )

    def _registers_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """The registers of complete traces, remembered: a complete trace's register never changes, and the
        standing rules ask for the same old episodes' every turn."""
        cache = self._register_cache  # shared by concurrent recalls: read with get, never check-then-read
        found = {m: r for m in memory_ids if (r := cache.get(m)) is not None}
        missing = [m for m in memory_ids if m not in found]
        if missing:
            if len(cache) > REGISTER_CACHE_SIZE:
                cache.clear()
            for memory_id, trace in self._store.get_traces(missing).items():
                if trace.status is TraceStatus.COMPLETE:
                    found[memory_id] = cache[memory_id] = trace.register
        return found

    @staticmethod
    def _constraints(
        episodes: Sequence[Sequence[tuple[Memory, Trace, float]]], *, standing: bool, now: datetime | None = None,
        anniversary_window_days: float = 0.0,
    ) -> tuple[ToneConstraint, ...]:
        """One constraint per episode; its most intense memory speaks for it. A standing rule whose lead memory
        was said within ``anniversary_window_days`` of a whole number of years before ``now`` says so ("This week
        marks a year since then", ``prompts.wording.anniversary_years_ago``); on every other day its wording, and
        so the prefix, is exactly what it always is."""
        constraints = []
        for rows in episodes:
            if not rows:
                continue
            ordered = sorted(rows, key=lambda r: (-r[1].intensity, r[0].created_at))
            lead_memory, lead_trace, age = ordered[0]
            anchors = tuple(dict.fromkeys(a for _, t, _ in ordered for a in t.anchors))
            years = (anniversary_years_ago(lead_memory.created_at, now, anniversary_window_days)
                     if standing and now is not None else None)
            constraints.append(
                ToneConstraint(
                    register=lead_trace.register,
                    anchors=anchors,
                    instruction=tone_instruction(lead_trace.register, anchors, text=lead_memory.text,
                                                 age_days=age, standing=standing, said_at=lead_memory.created_at,
                                                 anniversary_years=years,
                                                 anniversary_window_days=anniversary_window_days),
                    source_memory_ids=tuple(m.memory_id for m, _, _ in ordered),
                    standing=standing,
                    intensity=lead_trace.intensity,
                    valence=min(t.valence for _, t, _ in ordered),
                    anniversary_years=years,
                )
            )
        constraints.sort(key=lambda c: (-c.intensity, c.source_memory_ids))
        return tuple(constraints)
