"""Stage two as recall runs it: arrays from the candidates' traces, anchor matching, strength and scope weights,
the numpy kernel (``scoring.rerank.stage_two``), then maximal marginal relevance over what ranked.

Whether a candidate carries a tone rule or has decayed into a standing rule (and so leaves the ranking) is the
kernel's decision; this module passes each candidate's standing bar (``engine.recall.tone.standing_bar``) and its
episode's most intense moment, which the bar is held against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from engine.domain.models import (
    Candidate,
    Memory,
    MemoryKind,
    MemoryState,
    RecalledMemory,
    RecallQuery,
    Resolution,
    ScoreComponents,
    Trace,
    TraceStatus,
)
from engine.domain.ports import MemoryRecords, ToneCandidates
from engine.domain.text import anchor_key, matched_anchors, terms
from engine.domain.tuning import TuningProfile
from engine.recall.tone import episode_intensity, standing_bar
from engine.strength import stage_two_params, strengths
from scoring import rerank
from scoring.mmr import mmr

SECONDS_PER_DAY = 86400.0
MMR_POOL_FACTOR = 3
TermStats = tuple[dict[str, float], int]
"""Stage one's document frequency per query term, and the memories its legs counted, over the levels searched."""


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


def stage_two(
    store: MemoryRecords,
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
    ranked = rerank.stage_two(
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
        vectors = store.get_vectors([candidates[i].memory_id for i in order.tolist()])
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
