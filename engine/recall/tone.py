"""Recall's tone rules: the episodes behind this turn's tone constraints, the standing rules in force, resolutions
and anniversaries.

Which memories carry a tone rule and which have decayed into standing rules is decided once, in
``scoring.rerank.tone_masks``: stage two asks it of each candidate, this module of each episode's lead. What
stays here is the engine's side: each register's standing bar (``standing_bar``), reading episodes from the
store, and wording the rules.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from engine.domain.models import Memory, Resolution, ToneConstraint, Trace, TraceStatus
from engine.domain.ports import MemoryRecords, ToneCandidates, TraceRecords
from engine.domain.tuning import TuningProfile
from engine.strength import stage_two_params
from prompts.wording import anniversary_years_ago, tone_instruction
from scoring.rerank import salience_for, tone_masks

SECONDS_PER_DAY = 86400.0
REGISTER_CACHE_SIZE = 100_000


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


class ToneRules:
    """The tone rules of a turn, from the partition's tone candidates; remembers the registers it has read."""

    def __init__(self, *, memories: MemoryRecords, traces: TraceRecords) -> None:
        self._memories = memories
        self._traces = traces
        self._register_cache: dict[str, str] = {}

    def rules(
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
        lead_masks = functools.partial(
            tone_masks, intensity[leads], found.valence[positions][leads], salience[leads],
            np.ones(len(leads), dtype=bool), min_intensity=tone.min_intensity, max_valence=tone.max_valence,
            standing_rule_salience=tone.standing_rule_salience, standing_min_intensity=tone.standing_min_intensity,
        )
        # Asked with no register standing, the decision names the leads that decayed out of force: only their
        # registers are read (a long-lived partition holds thousands of episodes), for their standing bars.
        in_force, _ = lead_masks(standing_bar=np.full(len(leads), np.inf))
        bars = np.full(len(leads), np.inf)
        faded = np.flatnonzero(~in_force)
        if len(faded):
            faded_ids = [found.memory_ids[int(positions[leads[j]])] for j in faded]
            registers = self._registers_of(faded_ids)
            bars[faded] = [standing_bar(profile, registers.get(memory_id, "")) for memory_id in faded_ids]
        in_force, standing = lead_masks(standing_bar=bars)
        # A decayed episode is a standing rule whether or not this turn recalled it: the standing rules live in
        # the stable prefix, which must not depend on the turn's message. The rest decays out of force.
        is_selected &= in_force & ~standing
        standing_leads = leads[standing]
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
        memories = {m.memory_id: m for m in self._memories.get_memories(needed)}
        traces = self._traces.get_traces(needed)

        def materialise(groups: list[list[int]]) -> list[list[tuple[Memory, Trace, float]]]:
            return [
                [(memories[mid], traces[mid], float((now - memories[mid].created_at).total_seconds()
                                                    / SECONDS_PER_DAY))
                 for p in group if (mid := found.memory_ids[p]) in memories and mid in traces]
                for group in groups
            ]

        kept = materialise(standing_rows)
        return (
            constraints(materialise(current_rows), standing=False),
            constraints(kept, standing=True, now=now, anniversary_window_days=tone.anniversary_window_days),
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
            for memory_id, trace in self._traces.get_traces(missing).items():
                if trace.status is TraceStatus.COMPLETE:
                    found[memory_id] = cache[memory_id] = trace.register
        return found


def constraints(
    episodes: Sequence[Sequence[tuple[Memory, Trace, float]]], *, standing: bool, now: datetime | None = None,
    anniversary_window_days: float = 0.0,
) -> tuple[ToneConstraint, ...]:
    """One constraint per episode; its most intense memory speaks for it. A standing rule whose lead memory
    was said within ``anniversary_window_days`` of a whole number of years before ``now`` says so ("This week
    marks a year since then", ``prompts.wording.anniversary_years_ago``); on every other day its wording, and
    so the prefix, is exactly what it always is."""
    found = []
    for rows in episodes:
        if not rows:
            continue
        ordered = sorted(rows, key=lambda r: (-r[1].intensity, r[0].created_at))
        lead_memory, lead_trace, age = ordered[0]
        anchors = tuple(dict.fromkeys(a for _, t, _ in ordered for a in t.anchors))
        years = (anniversary_years_ago(lead_memory.created_at, now, anniversary_window_days)
                 if standing and now is not None else None)
        found.append(
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
    found.sort(key=lambda c: (-c.intensity, c.source_memory_ids))
    return tuple(found)
