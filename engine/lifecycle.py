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
  fact that keeps coming back, demote a low-value memory that recall keeps returning (rich-get-richer). Nothing
  changes until a reviewer keeps it; a kept change can be reverted to the exact prior state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import Memory, MemoryState, Partition, ReviewItem, TraceStatus, partition_key
from engine.domain.ports import Ledger, MemoryStore, Profiles
from engine.domain.text import terms
from engine.facts import FactService
from engine.strength import strengths

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
            recalls = self._ledger.forget_recalls(key)
            self._ledger.forget_resolutions(key)
        else:
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
        """Fold usage in, finish interrupted supersessions, archive what decayed, file proposals."""
        flushed = self.flush_usage()
        now = self._clock()
        archived = proposed = repaired = 0
        for partition in partitions:
            repaired += self._facts.repair(partition, at=now)
            profile = self._profiles.profile_for(partition.character_id)
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
                    proposed += self._propose(memory, state, strength, traces.get(memory.memory_id) is not None
                                              and traces[memory.memory_id].status is TraceStatus.COMPLETE
                                              and traces[memory.memory_id].intensity <= DEMOTE_MAX_INTENSITY,
                                              profile.scopes.promote_mentions, now)
        return SweepReport(partitions=len(partitions), archived=archived, proposed=proposed, repaired=repaired,
                           usage_flushed=flushed)

    def _propose(self, memory: Memory, state: MemoryState, strength: float, low_value: bool, promote_mentions: int,
                 now: datetime) -> int:
        key = partition_key(memory.character_id, memory.user_id)
        if memory.kind == "fact" and state.status == "provisional" \
                and state.signals.mentions >= promote_mentions and not self._ledger.is_pending(memory.memory_id,
                                                                                               "promote"):
            self._ledger.propose("promote", partition=key, before=state,
                                 after=state.model_copy(update={"status": "active"}), score=strength, at=now,
                                 reason=f"stated {state.signals.mentions} times")
            return 1
        if memory.kind == "turn" and state.status == "active" and not state.pinned and low_value \
                and state.signals.retrievals >= DEMOTE_MIN_RETRIEVALS \
                and not self._ledger.is_pending(memory.memory_id, "demote"):
            self._ledger.propose("demote", partition=key, before=state, score=strength, at=now,
                                 after=state.model_copy(update={"signals": state.signals.model_copy(
                                     update={"confidence": round(state.signals.confidence * 0.5, 6)})}),
                                 reason=f"low-value memory retrieved {state.signals.retrievals} times")
            return 1
        return 0

    def decide(self, item_id: str, decision: str, partitions: Sequence[Partition], *, by: str) -> ReviewItem:
        item = self._ledger.item(item_id)
        if item.partition not in {partition_key(p.character_id, p.user_id) for p in partitions}:
            raise NotFound(f"no review item {item_id!r}")
        memory, current = self._own(item.memory_id, partitions)
        now = self._clock()
        if decision == "kept":
            if item.kind == "promote":
                self._facts.promote(memory.memory_id, memory.partition, at=now, actor=by)
            else:
                self._store.put_states([item.after.model_copy(update={"changed_at": now})])
            self._audit(memory, self._states([memory.memory_id])[memory.memory_id], f"{item.kind}_kept", by)
        elif decision == "reverted":
            # The exact prior state, down to the strength signals; a promotion's supersession is undone too.
            restore = [item.before]
            if item.kind == "promote":
                restore += self._undo_supersession(memory, current)
            self._store.put_states(restore)
            self._audit(memory, item.before, f"{item.kind}_reverted", by)
        elif decision != "rejected":
            raise InvalidInput(f"decision {decision!r} is not kept, rejected or reverted", field="decision")
        return self._ledger.decide(item_id, decision, by=by, at=now)  # type: ignore[arg-type]

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
        return self._ledger.open_items([partition_key(p.character_id, p.user_id) for p in partitions],
                                       decision=decision)  # type: ignore[arg-type]
