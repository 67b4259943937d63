"""Memory lifecycle: usage signals, the cold archive, pins, erasure with a receipt, and consolidation.

- **Usage.** Recall notes what it returned; ``flush_usage`` folds that into the stored strength vectors
  (retrievals, distinct query kinds, last retrieved) off the request path.
- **Archive.** Decay has a destination: the nightly sweep moves a memory whose live strength fell below the
  profile's ``archive_below`` into the cold archive (status ``archived``): out of everyday recall, listed with
  an audit flag, restorable exactly as it was. Pinned memories and canon never go (their floors keep them up);
  a grief keeps its standing tone rule from the archive.
- **Erasure.** Only on explicit request, and complete: memories, traces, facts, vectors, lexical entries, the
  raw turns (all of a user's, or the one a memory was made from) and the recall log, in the store's every index;
  the write-ahead logs are checkpointed before the receipt, and erased turn ids are tombstoned so a retry cannot
  store them again. The receipt lists what went. The audit trail keeps that something existed and how it
  changed, never what it said: proper names at most, and ``strict`` drops those too.
- **Consolidation proposes, never writes.** The sweep files proposals to the review queue: promote a provisional
  fact that clears the consolidation gate (``scoring.consolidation``, its parameters the profile's
  ``consolidation``), demote a low-value memory that recall keeps returning (rich-get-richer). Nothing changes until
  a reviewer keeps it, or the organisation's earned trust does (``engine.trust``: marked ``auto_kept``, undoable one
  by one back into the queue); a kept change can be reverted to the exact prior state. A kept promotion starts with
  the gate's score as its base strength.
- **Rehearsal.** The sweep enrols high-stakes facts on a Leitner schedule (``engine.rehearsal``).
- **Tickets.** A user's fact on a canon slot (``conflict``) and a new value on a rehearsed fact's slot
  (``contradiction``) are filed by ``engine.facts`` and decided here like any item.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine import rehearsal, trust
from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import (
    Memory,
    MemoryState,
    Partition,
    ReviewItem,
    ReviewSide,
    TraceStatus,
    TrustRecord,
    partition_key,
)
from engine.domain.ports import Ledger, MemoryStore, Profiles
from engine.domain.review import trust_move
from engine.domain.scopes import namespace_prefix, partition_for
from engine.domain.text import terms
from engine.domain.tuning import TuningProfile
from engine.facts import FactService
from engine.strength import gate_params, signal_vectors, strength_params, strengths
from scoring import consolidation
from scoring import strength as strength_kernel

log = logging.getLogger("feltsense.lifecycle")
MAX_QUERY_KINDS = 32
DEMOTE_MIN_RETRIEVALS = 20
DEMOTE_MAX_INTENSITY = 0.3


def query_kind(message: str) -> str:
    """What kind of question reached a memory: its leading content word (stemmed). Crude on purpose: it only has
    to tell "what's my usual?" from "where do I live?", so that breadth of use counts, not repetition."""
    found = terms(message)
    return found[0] if found else ""


class ErasureReceipt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memories: tuple[str, ...]
    facts: tuple[str, ...]
    traces: int
    turns: int
    review_items: int
    recalls: int = 0
    strict: bool
    audit_kept: bool = True


class SweepReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    partitions: int
    archived: int
    proposed: int
    repaired: int
    usage_flushed: int
    recalls_expired: int = 0
    auto_kept: int = 0
    enrolled: int = 0


class Lifecycle:
    def __init__(self, *, store: MemoryStore, ledger: Ledger, facts: FactService, profiles: Profiles,
                 clock: Callable[[], datetime]) -> None:
        self._store = store
        self._ledger = ledger
        self._facts = facts
        self._profiles = profiles
        self._clock = clock
        self._usage: list[tuple[str, str, datetime]] = []
        self._usage_lock = threading.Lock()

    # -- usage --------------------------------------------------------------------------------------------

    def note_retrieved(self, memory_ids: Sequence[str], message: str, at: datetime) -> None:
        kind = query_kind(message)
        with self._usage_lock:
            self._usage.extend((memory_id, kind, at) for memory_id in memory_ids)

    def flush_usage(self) -> int:
        with self._usage_lock:
            pending, self._usage = self._usage, []
        if not pending:
            return 0
        states = self._states([memory_id for memory_id, _, _ in pending])
        for memory_id, kind, at in pending:
            state = states.get(memory_id)
            if state is None:
                continue  # erased since
            signals = state.signals
            kinds = signals.query_kinds if kind in signals.query_kinds or not kind else (
                (*signals.query_kinds, kind)[-MAX_QUERY_KINDS:])
            last = at if signals.last_retrieved is None else max(at, signals.last_retrieved)
            states[memory_id] = state.model_copy(update={"signals": signals.model_copy(update={
                "retrievals": signals.retrievals + 1, "query_kinds": kinds, "last_retrieved": last})})
        self._store.put_states(list(states.values()))
        return len(pending)

    def _states(self, memory_ids: Sequence[str]) -> dict[str, MemoryState]:
        """Stored or default states of the memories that exist."""
        ids = list(dict.fromkeys(memory_ids))
        stored = self._store.get_states(ids)
        existing = {m.memory_id for m in self._store.get_memories(ids)}
        return {m: stored.get(m) or MemoryState(memory_id=m) for m in ids if m in existing}

    # -- archive, restore, pins ---------------------------------------------------------------------------

    def _own(self, memory_id: str, partitions: Sequence[Partition]) -> tuple[Memory, MemoryState]:
        found = self._store.get_memories([memory_id])
        if not found or found[0].partition not in partitions:
            raise NotFound(f"no memory {memory_id!r}")
        return found[0], self._states([memory_id])[memory_id]

    def archive(self, memory_id: str, partitions: Sequence[Partition], *, actor: str) -> MemoryState:
        memory, state = self._own(memory_id, partitions)
        if state.status == "archived":
            return state
        if state.status != "active":
            raise InvalidInput(f"memory {memory_id!r} is {state.status}; only active memories are archived",
                               field="status")
        return self._set(memory, state.model_copy(update={"status": "archived", "prior_status": state.status,
                                                          "changed_at": self._clock()}), "archived", actor)

    def restore(self, memory_id: str, partitions: Sequence[Partition], *, actor: str) -> MemoryState:
        """Back into everyday recall exactly as it was: the same content, trace, vector and signals."""
        memory, state = self._own(memory_id, partitions)
        if state.status != "archived":
            raise InvalidInput(f"memory {memory_id!r} is {state.status}, not archived", field="status")
        return self._set(memory, state.model_copy(update={"status": state.prior_status or "active",
                                                          "prior_status": None, "changed_at": self._clock()}),
                         "restored", actor)

    def pin(self, memory_id: str, partitions: Sequence[Partition], *, pinned: bool, actor: str) -> MemoryState:
        memory, state = self._own(memory_id, partitions)
        return self._set(memory, state.model_copy(update={"pinned": pinned, "changed_at": self._clock()}),
                         "pinned" if pinned else "unpinned", actor)

    def _set(self, memory: Memory, state: MemoryState, event: str, actor: str) -> MemoryState:
        self._store.put_states([state])
        self._audit(memory, state, event, actor)
        return state

    def _audit(self, memory: Memory, state: MemoryState, event: str, actor: str) -> None:
        now = self._clock()
        [strength] = strengths([memory], {memory.memory_id: state}, now,
                               self._profiles.profile_for(memory.character_id)).tolist()
        names = (memory.fact.subject, memory.fact.relation) if memory.fact else self._anchors(memory)
        self._ledger.record(memory.memory_id, partition_key(memory.character_id, memory.user_id), event, at=now,
                            actor=actor, status=state.status, strength=round(strength, 6), names=names)

    def _anchors(self, memory: Memory) -> tuple[str, ...]:
        trace = self._store.get_traces([memory.memory_id]).get(memory.memory_id)
        return () if trace is None else trace.anchors

    # -- erasure ------------------------------------------------------------------------------------------

    def erase_memory(self, memory_id: str, partitions: Sequence[Partition], *, strict: bool,
                     actor: str) -> ErasureReceipt:
        memory, _ = self._own(memory_id, partitions)
        # The facts distilled from this memory go with it: they say what it said.
        derived = [f for f in self._store.list_facts(memory.partition)
                   if f.fact is not None and memory_id in f.fact.provenance]
        return self._erase([memory, *derived], partition=None, strict=strict, actor=actor)

    def erase_partition(self, partition: Partition, *, strict: bool, actor: str) -> ErasureReceipt:
        """A user's erasure request: everything they said to this character, in every index."""
        memories: list[Memory] = []
        offset = 0
        while page := self._store.list_memories(partition, offset=offset, limit=500):
            memories.extend(page)
            offset += len(page)
        return self._erase(memories, partition=partition, strict=strict, actor=actor)

    def _erase(self, memories: Sequence[Memory], *, partition: Partition | None, strict: bool,
               actor: str) -> ErasureReceipt:
        ids = [m.memory_id for m in memories]
        traces = self._store.get_traces(ids)
        states = self._states(ids)
        for memory in memories:  # the skeleton first: that it existed, and its last status and strength
            self._audit(memory, states.get(memory.memory_id) or MemoryState(memory_id=memory.memory_id),
                        "erased", actor)
        now = self._clock()
        # Tombstones first: a crash part-way through must not leave erased turn ids that a retry could store again.
        said: dict[Partition, list[str]] = {} if partition is None else {partition: []}
        for memory in memories:
            turn_ids = said.setdefault(memory.partition, [])
            if memory.kind == "turn" and memory.turn_id:
                turn_ids.append(memory.turn_id)
        for owner, turn_ids in said.items():
            self._ledger.tombstone_turns(partition_key(owner.character_id, owner.user_id), turn_ids, at=now)
        self._store.delete_memories(ids)
        review = recalls = 0
        erased_turns: list[str] = []
        if partition is not None:
            key = partition_key(partition.character_id, partition.user_id)
            erased_turns = self._store.delete_turns(partition)
            # The character's turns too: a retry of the whole batch must not store the conversation again.
            self._ledger.tombstone_turns(key, erased_turns, at=now)
            review = self._ledger.forget_partition(key)
            review += self._ledger.forget_items(ids)  # a conflict ticket of theirs sits in the canon's queue
            recalls = self._ledger.forget_recalls(key)
            self._ledger.forget_resolutions(key)
        else:
            review = self._ledger.forget_items(ids)
            for fact in memories:  # a fact erased while its turns stay must not be distilled from them again
                if fact.fact is not None and fact.fact.provenance:
                    self._ledger.suppress(fact.memory_id, fact.fact.provenance)
            for owner, turn_ids in said.items():
                recalls += self._ledger.forget_recalls(partition_key(owner.character_id, owner.user_id), ids)
                # A resolution naming an erased memory goes: resolved or resolving, it said something about it.
                self._ledger.forget_resolutions(partition_key(owner.character_id, owner.user_id), ids)
                erased_turns += self._store.delete_turns(owner, turn_ids)  # the raw turn said it too
        self._ledger.redact_names(ids, strict=strict)
        # Deleted rows linger in the write-ahead logs until a checkpoint: the receipt waits for it.
        self._store.purge()
        self._ledger.purge()
        return ErasureReceipt(
            memories=tuple(m.memory_id for m in memories if m.kind == "turn"),
            facts=tuple(m.memory_id for m in memories if m.kind == "fact"),
            traces=len(traces), turns=len(erased_turns), review_items=review, recalls=recalls, strict=strict,
        )

    # -- the nightly sweep and the review queue -----------------------------------------------------------

    def sweep(self, partitions: Sequence[Partition]) -> SweepReport:
        """Fold usage in, finish interrupted supersessions, archive what decayed, enrol rehearsals, file proposals
        (and keep those the organisation's trust allows)."""
        flushed = self.flush_usage()
        now = self._clock()
        archived = proposed = repaired = enrolled = 0
        auto_kept: list[int] = []
        for partition in partitions:
            repaired += self._facts.repair(partition, at=now)
            profile = self._profiles.profile_for(partition.character_id)
            candidates: list[tuple[Memory, MemoryState]] = []
            offset = 0
            while page := self._store.list_memories(partition, offset=offset, limit=500):
                offset += len(page)
                states = self._states([m.memory_id for m in page])
                live = strengths(page, states, now, profile)
                traces = self._store.get_traces([m.memory_id for m in page])
                for memory, strength in zip(page, live.tolist(), strict=True):
                    state = states[memory.memory_id]
                    if state.status == "active" and not state.pinned and memory.scope != "canon" \
                            and strength < profile.strength.archive_below:
                        self._set(memory, state.model_copy(update={"status": "archived", "prior_status": "active",
                                                                   "changed_at": now}), "archived", "sweep")
                        archived += 1
                        continue
                    enrolled += self._enrol(memory, state, profile, now)
                    if memory.kind == "fact" and state.status == "provisional" \
                            and not self._ledger.is_pending(memory.memory_id, "promote") \
                            and not self._ledger.is_pending(memory.memory_id, "contradiction"):
                        candidates.append((memory, state))
                    trace = traces.get(memory.memory_id)
                    low_value = trace is not None and trace.status is TraceStatus.COMPLETE \
                        and trace.intensity <= DEMOTE_MAX_INTENSITY
                    proposed += self._propose_demotion(memory, state, strength, low_value, profile, now, auto_kept)
            proposed += self._propose_promotions(candidates, profile, now, auto_kept)
        return SweepReport(partitions=len(partitions), archived=archived, proposed=proposed, repaired=repaired,
                           usage_flushed=flushed, auto_kept=len(auto_kept), enrolled=enrolled)

    def _enrol(self, memory: Memory, state: MemoryState, profile: TuningProfile, now: datetime) -> int:
        """Put a high-stakes fact on the rehearsal schedule, or take one off that no longer qualifies."""
        reason = rehearsal.enrolment_reason(memory, state, profile.rehearsal)
        if reason is not None and state.rehearsal is None:
            self._set(memory, state.model_copy(update={"rehearsal": rehearsal.enrolled(reason, now,
                                                                                          profile.rehearsal)}),
                      "rehearsal_enrolled", "sweep")
            return 1
        if reason is None and state.rehearsal is not None and state.status == "active":
            self._set(memory, state.model_copy(update={"rehearsal": None}), "rehearsal_ended", "sweep")
        return 0

    def _propose_promotions(self, candidates: Sequence[tuple[Memory, MemoryState]], profile: TuningProfile,
                            now: datetime, auto_kept: list[int]) -> int:
        """The gate over every provisional fact of a partition at once; each that passes is proposed with its score
        as its starting strength."""
        if not candidates:
            return 0
        memories = [m for m, _ in candidates]
        states = {m.memory_id: s for m, s in candidates}
        provenance = [m for memory in memories if memory.fact for m in memory.fact.provenance]
        vectors = signal_vectors(memories, states, now, self._store.get_states(provenance) if provenance else {})
        result = consolidation.gate(vectors, gate_params(profile))
        proposed = 0
        for i, (memory, state) in enumerate(candidates):
            if not result.passed[i]:
                continue
            score = round(float(result.score[i]), 6)
            after = state.model_copy(update={"status": "active", "signals": state.signals.model_copy(
                update={"confidence": self._starting_confidence(state, score, profile)})})
            cleared = [name for name, hit in zip(consolidation.SIGNALS, result.cleared[i].tolist(), strict=True)
                       if hit]
            how = (f"blended score {score:.2f} >= {profile.consolidation.threshold:g}"
                   if profile.consolidation.mode == "blended"
                   else f"{len(cleared)} of 6 signals cleared (k = {profile.consolidation.k}): {', '.join(cleared)}")
            item = self._ledger.propose(
                "promote", partition=partition_key(memory.character_id, memory.user_id), before=state, after=after,
                score=score, at=now, change_kind=trust.change_kind("promote", memory),
                reason=f"{how}; stated {state.signals.mentions} times, its turns recalled {int(vectors[i, 0])} times")
            self._maybe_auto_keep(item, memory, profile, auto_kept)
            proposed += 1
        return proposed

    @staticmethod
    def _starting_confidence(state: MemoryState, score: float, profile: TuningProfile) -> float:
        """The confidence that makes the promoted fact's base strength (``scoring.strength``: trust x confidence x
        decay x usage, decay 1 when kept) equal the gate's score."""
        signals = state.signals
        usage = float(strength_kernel.usage_boost(np.array([signals.retrievals]), np.array([len(signals.query_kinds)]),
                                                  strength_params(profile))[0])
        trust_of = strength_kernel.source_trust_of(signals.source)
        return round(min(1.0, score / (trust_of * usage)) if trust_of > 0 else 0.0, 6)

    def _propose_demotion(self, memory: Memory, state: MemoryState, strength: float, low_value: bool,
                          profile: TuningProfile, now: datetime, auto_kept: list[int]) -> int:
        if memory.kind == "turn" and state.status == "active" and not state.pinned and low_value \
                and state.signals.retrievals >= DEMOTE_MIN_RETRIEVALS \
                and not self._ledger.is_pending(memory.memory_id, "demote"):
            item = self._ledger.propose(
                "demote", partition=partition_key(memory.character_id, memory.user_id), before=state,
                score=strength, at=now, change_kind="demote",
                after=state.model_copy(update={"signals": state.signals.model_copy(
                    update={"confidence": round(state.signals.confidence * 0.5, 6)})}),
                reason=f"low-value memory retrieved {state.signals.retrievals} times")
            self._maybe_auto_keep(item, memory, profile, auto_kept)
            return 1
        return 0

    def _maybe_auto_keep(self, item: ReviewItem, memory: Memory, profile: TuningProfile,
                         auto_kept: list[int]) -> None:
        record = self._ledger.trust_record(namespace_prefix(memory.character_id), item.change_kind)
        if not trust.earned(record, item.kind, profile.trust):
            return
        applied = self._apply(item, memory, trust.ACTOR, f"{item.kind}_auto_kept")
        self._ledger.decide(item.item_id, "auto_kept", by=trust.ACTOR, at=self._clock(), applied=applied)
        auto_kept.append(1)

    def trust_record(self, org: str, change_kind: str) -> TrustRecord:
        return self._ledger.trust_record(org, change_kind)

    def decide(self, item_id: str, decision: str, partitions: Sequence[Partition], *, by: str) -> ReviewItem:
        """A person's decision: ``kept`` applies the change, ``rejected`` drops it, ``reverted`` restores the exact
        prior state of a kept one, ``undone`` restores the exact prior state of an automatic keep and puts the item
        back in the queue (pending)."""
        item = self._ledger.item(item_id)
        memory = self._subject(item, partitions)
        moved = {"kept": "kept", "rejected": "rejected", "reverted": "reverted", "undone": "pending"}.get(decision)
        if moved is None:
            raise InvalidInput(f"decision {decision!r} is not kept, rejected, reverted or undone", field="decision")
        trust_move(item.decision, moved, item_id)  # refused before anything is applied
        applied: list[MemoryState] = []
        if decision == "kept":
            applied = self._apply(item, memory, by, f"{item.kind}_kept")
        elif decision in ("reverted", "undone"):
            self._restore(item, memory, by, f"{item.kind}_reverted" if decision == "reverted"
                          else f"{item.kind}_auto_keep_undone")
        return self._ledger.decide(item_id, moved, by=by, at=self._clock(),  # type: ignore[arg-type]
                                   applied=applied)

    def _subject(self, item: ReviewItem, partitions: Sequence[Partition]) -> Memory:
        """The memory an item changes, if the caller may decide it. A conflict ticket is filed in the canon's queue
        (a director decides it) about a user's fact of the same character."""
        if item.partition not in {partition_key(p.character_id, p.user_id) for p in partitions}:
            raise NotFound(f"no review item {item.item_id!r}")
        found = self._store.get_memories([item.memory_id])
        owner = (partition_for("canon", found[0].character_id) if found and item.kind == "conflict"
                 else found[0].partition if found else None)
        if owner is None or owner not in partitions:
            raise NotFound(f"no review item {item.item_id!r}")
        return found[0]

    def _apply(self, item: ReviewItem, memory: Memory, by: str, event: str) -> list[MemoryState]:
        """Make the change; returns the prior states of the other memories it changed (a promotion revokes its
        slot's fact and marks that fact's turns stale), which the ledger keeps for an exact revert."""
        now = self._clock()
        current = self._states([memory.memory_id])[memory.memory_id]
        others: list[MemoryState] = []
        if item.kind in ("promote", "contradiction"):
            facts = self._store.list_facts(memory.partition)
            sources = [m for f in facts if f.fact is not None for m in f.fact.provenance]
            watched = [f.memory_id for f in facts if f.memory_id != memory.memory_id] + sources
            prior = self._store.get_states(watched)
            self._facts.promote(memory.memory_id, memory.partition, at=now, actor=by,
                                confidence=item.after.signals.confidence)
            changed = self._store.get_states(watched)
            others = [prior.get(m) or MemoryState(memory_id=m) for m in dict.fromkeys(watched)
                      if changed.get(m) != prior.get(m)]
        elif item.kind == "conflict":
            self._store.put_states([current.model_copy(update={"overrides_canon": True, "changed_at": now})])
        else:
            self._store.put_states([item.after.model_copy(update={"changed_at": now})])
        self._audit(memory, self._states([memory.memory_id])[memory.memory_id], event, by)
        # Its own state may have moved since the proposal (said again, recalled): the revert restores this one.
        return ([current] if current != item.before else []) + others

    def _restore(self, item: ReviewItem, memory: Memory, by: str, event: str) -> None:
        """The exact prior state, down to the strength signals; a promotion's supersession is undone too."""
        current = self._states([memory.memory_id])[memory.memory_id]
        restore = [item.before]
        if item.applied:
            restore += item.applied
        elif item.kind in ("promote", "contradiction"):  # kept before the ledger kept what a keep changed
            restore += self._undo_supersession(memory, current)
        self._store.put_states(list({state.memory_id: state for state in restore}.values()))
        self._audit(memory, self._states([memory.memory_id])[memory.memory_id], event, by)

    def _undo_supersession(self, fact: Memory, state: MemoryState) -> list[MemoryState]:
        """States the promotion changed besides the fact's own: what it revoked goes back to active, and the
        memories it marked stale are unmarked."""
        facts = {f.memory_id: f for f in self._store.list_facts(fact.partition)}
        others = self._store.get_states(list(facts))
        revoked = [s for s in others.values() if s.superseded_by == fact.memory_id and s.status == "revoked"]
        sources = [m for s in revoked if (f := facts[s.memory_id].fact) is not None for m in f.provenance]
        stale = [s for s in self._store.get_states(sources).values() if s.superseded_by == fact.memory_id]
        return ([s.model_copy(update={"status": "active", "superseded_by": None}) for s in revoked]
                + [s.model_copy(update={"stale": False, "superseded_by": None}) for s in stale])

    def review_items(self, partitions: Sequence[Partition], decision: str | None = "pending") -> list[ReviewItem]:
        """The items, a conflict's and a contradiction's with both sides' words (read from the store)."""
        items = self._ledger.open_items([partition_key(p.character_id, p.user_id) for p in partitions],
                                        decision=decision)  # type: ignore[arg-type]
        named = [i for i in items if i.counterpart is not None]
        if not named:
            return items
        found = {m.memory_id: m for m in self._store.get_memories(
            [m for i in named for m in (i.memory_id, i.counterpart) if m is not None])}
        return [item if item.counterpart is None else item.model_copy(update={"sides": tuple(
            ReviewSide(memory_id=m.memory_id, scope=m.scope, text=m.text)
            for memory_id in (item.memory_id, item.counterpart) if (m := found.get(memory_id)) is not None)})
            for item in items]
