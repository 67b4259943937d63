"""Fact currency for recall, and Path A: the records the context's stable prefix is built from.

A fact is current when it is the one active fact of its slot (``engine.facts.current``). Stage two ranks only
current facts (``current_facts_only``), and Path A (``path_a``) reads the character's canon and the user's current
facts by exact lookup, no search. Both read a partition's facts once per recall (``FactListings``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from engine.domain.models import Candidate, Memory, MemoryState, Partition
from engine.domain.ports import MemoryRecords, StateRecords
from engine.domain.scopes import CANON, partition_for
from engine.facts import current


class FactReads(MemoryRecords, StateRecords, Protocol):
    """What Path A and the fact currency read: memories and their states (the facts among them)."""


_DEFAULT = MemoryState(memory_id="")
FactListings = dict[Partition, tuple[list[Memory], dict[str, MemoryState]]]


def fact_listing(
    store: FactReads, partition: Partition, listings: FactListings
) -> tuple[list[Memory], dict[str, MemoryState]]:
    """A partition's facts with their states, read once per recall: stage two and Path A both need them."""
    found = listings.get(partition)
    if found is None:
        facts = store.list_facts(partition)
        found = listings[partition] = (facts, store.get_states([f.memory_id for f in facts]))
    return found


def path_a(
    store: FactReads, character_id: str, user_id: str, now: datetime, listings: FactListings
) -> tuple[list[Memory], list[Memory]]:
    """Path A's records, by exact lookup (no search): the character's canon (pinned canon records, then the
    current canon facts) and the user's current facts. Nothing later than ``now``."""
    canon = partition_for("canon", character_id)
    canon_memories: list[Memory] = []
    offset = 0
    while page := store.list_memories(canon, offset=offset, limit=500):
        canon_memories.extend(page)
        offset += len(page)
    canon_memories = [m for m in canon_memories if m.created_at <= now]
    states = store.get_states([m.memory_id for m in canon_memories])
    pinned = [m for m in canon_memories if (s := states.get(m.memory_id)) is not None and s.pinned
              and s.status == "active"]
    canon_facts = [m for m in current([m for m in canon_memories if m.kind == "fact"], states).values()
                   if m.memory_id not in {p.memory_id for p in pinned}]
    listed, listed_states = fact_listing(store, partition_for("user", character_id, user_id), listings)
    facts = list(current([f for f in listed if f.created_at <= now], listed_states).values())
    # Canon holds its slots: a user's fact on one is left out (a conflict ticket waits for a director), unless a
    # director let it stand for this user, when it is the canon fact that this user's prefix leaves out.
    overridden = {f.slot for f in facts if listed_states.get(f.memory_id, _DEFAULT).overrides_canon}
    canon_slots = {m.slot for m in canon_facts}
    facts = [f for f in facts if f.slot not in canon_slots or f.slot in overridden]
    canon_facts = [m for m in canon_facts if m.slot not in overridden]
    canon_facts.sort(key=lambda m: (m.created_at, m.memory_id))
    return [*sorted(pinned, key=lambda m: (m.created_at, m.memory_id)), *canon_facts], facts


def current_facts_only(
    store: FactReads, character_id: str, candidates: list[Candidate], memories: dict[str, Memory],
    states: dict[str, MemoryState], notes: list[str], listings: FactListings, user_id: str | None = None,
) -> tuple[list[Candidate], dict[str, Memory], dict[str, MemoryState]]:
    """Facts that are not current leave; a stale memory brings the fact that replaced it; canon wins.

    A memory that carried a superseded fact stays findable (its feelings still matter) but it brings the current
    fact in with at least its own relevance, and its strength carries the stale weight, so the outdated chunk
    never outranks the fact. A user's or the organisation's fact on a slot the character's canon holds is left
    out: a preference can shape an answer but never override canon (a conflict ticket asks a director; a user's
    fact the director let stand, ``overrides_canon``, stays, and the canon fact it contradicts leaves).
    """
    fact_partitions = {m.partition for m in memories.values() if m.kind == "fact"}
    wanted = {s.superseded_by for s in states.values() if s.stale and s.superseded_by}
    if not fact_partitions and not wanted:
        return candidates, memories, states
    fetched = {m.memory_id: m for m in store.get_memories([w for w in wanted if w not in memories])}
    fact_partitions |= {m.partition for m in fetched.values()}
    if any(m.kind == "fact" and m.scope != "canon" for m in memories.values()):
        fact_partitions.add(partition_for("canon", character_id))
    by_partition: dict[Partition, set[str]] = {}
    canon_slots: set[tuple[str, str]] = set()
    for part in fact_partitions:
        winners = current(*fact_listing(store, part, listings))
        by_partition[part] = {f.memory_id for f in winners.values()}
        if part.user_id == CANON:
            canon_slots |= set(winners)
    overridden: set[tuple[str, str]] = set()
    if user_id is not None and any(m.kind == "fact" and m.scope == "canon" for m in memories.values()):
        listed, listed_states = fact_listing(store, partition_for("user", character_id, user_id), listings)
        overridden = {f.slot for f in listed if f.slot is not None
                      and listed_states.get(f.memory_id, _DEFAULT).overrides_canon
                      and listed_states.get(f.memory_id, _DEFAULT).status == "active"}
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
            state = states.get(candidate.memory_id)
            if memory.scope != "canon" and memory.slot in canon_slots \
                    and not (state is not None and state.overrides_canon):
                notes.append(f"{memory.scope} fact {memory.memory_id} left out: canon holds its slot")
                continue
            if memory.scope == "canon" and memory.slot in overridden:
                notes.append(f"canon fact {memory.memory_id} left out: a director let this user's fact stand")
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
        states = {**states, **store.get_states([c.memory_id for c in kept if c.memory_id not in states])}
    kept.sort(key=lambda c: -c.relevance)
    return kept, memories, states
