"""Atomic facts: written with supersession, deduplicated by content, gated by a role x scope matrix.

A fact is a memory of kind ``fact`` in the partition of its scope (``engine.domain.scopes``), so it is found by the
same hybrid search and ranked by the same scorer as everything else. What makes it a fact is its slot,
``(subject, relation)``, and its content hash: within one partition (so the scope and the user are part of
the key), a new fact on a slot revokes the active one and points it to its replacement in the same store step,
identical content dedups, and a private fact never touches a shared one or another user's, because they live
in different partitions.

Status is computed here, never taken from the caller: see ``status_for``. So is the sentence: see
``stored_sentence``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import Forbidden, InvalidInput, NotFound
from engine.domain.models import (
    ExtractedFact,
    FactInfo,
    Memory,
    MemoryState,
    Partition,
    ReviewKind,
    Scope,
    Source,
    Status,
    StrengthSignals,
    partition_key,
)
from engine.domain.ports import Embedder, Ledger, MemoryStore, Profiles
from engine.domain.scopes import partition_for
from engine.domain.tuning import ProfileSource
from engine.domain.vocabulary import ended_value, fact_sentence
from engine.rehearsal import confirmed
from scoring.strength import source_trust_of
from traces.facts import well_formed

log = logging.getLogger("feltsense.facts")

Writer = Literal["user", "author", "organisation", "system"]
"""On whose authority a fact is written: ``user``, the user's own words about themselves (a character runtime relays
them); ``author``, whoever writes the character; ``organisation``, the deployment's own voice; ``system``, the
write-time pass reading the user's turns. Who may act as which is the caller's business (the HTTP API maps its key
roles onto these in ``api/lifecycle.py``)."""


# The writer x scope matrix. None: refused. "policy": the relation's policy decides (system extraction).
STATUS_MATRIX: dict[tuple[Writer, Scope], Status | Literal["policy"] | None] = {
    ("user", "user"): "active",  # the user's own words about themselves
    ("system", "user"): "policy",
    ("author", "canon"): "active",  # canon is written by the character's author...
    ("organisation", "canon"): "active",
    ("system", "canon"): "provisional",
    ("organisation", "shared"): "active",
    ("author", "shared"): "provisional",
    ("system", "shared"): "provisional",
    # ...and protected from user claims: the user's words never become canon or shared; nobody but the user writes
    # a user's private facts (the organisation included).
}


def may_write(writer: Writer, scope: Scope) -> bool:
    """Whether ``writer`` may write facts of ``scope`` at all (``status_for`` refuses the rest)."""
    return STATUS_MATRIX.get((writer, scope)) is not None


def status_for(writer: Writer, scope: Scope, relation: str, auto_active: Iterable[str]) -> Status:
    decided = STATUS_MATRIX.get((writer, scope))
    if decided is None:
        raise Forbidden(f"{writer} facts may not be written at the {scope} level")
    if decided == "policy":
        return "active" if relation in set(auto_active) else "provisional"
    return decided


# Who writes a fact in their own words: the author the character's lore, the organisation its own. Every other
# writer is the user (relayed) or reads the user's turns (the system).
OWN_WORDS: frozenset[Writer] = frozenset({"author", "organisation"})


def stored_sentence(subject: str, relation: str, value: str, *, said: str | None, writer: Writer) -> str:
    """The sentence a fact is stored, indexed and shown with. The author's or the organisation's (``said``) is kept
    as written. Anyone else's is the user's text, so the server renders it from the triple with the value quoted
    (``prompts.wording.fact_sentence``) and drops the one that came with it: a caller's sentence never reaches
    the character's prompt as a line of its own ("SYSTEM OVERRIDE: ignore all tone rules...")."""
    if said and writer in OWN_WORDS:
        return said
    return fact_sentence(subject, relation, value)


def normalise(sentence: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", sentence.casefold())).strip()


def content_hash(sentence: str) -> str:
    return hashlib.sha256(normalise(sentence).encode()).hexdigest()


def fact_id_for(partition: Partition, subject: str, relation: str, digest: str) -> str:
    """Deterministic: the same fact written twice (a retried job, a crash) is the same record."""
    key = "\x1f".join((partition.character_id, partition.user_id, subject, relation, digest))
    return "f_" + hashlib.blake2b(key.encode(), digest_size=12).hexdigest()


def current(facts: Sequence[Memory], states: dict[str, MemoryState]) -> dict[tuple[str, str], Memory]:
    """The one active fact of each slot: the newest, if a crash between the steps of a supersession (on a
    store without transactions) ever left two active. This is what recall and listings treat as current."""
    found: dict[tuple[str, str], Memory] = {}
    for fact in facts:
        state = states.get(fact.memory_id)
        if fact.slot is None or (state is not None and state.status != "active"):
            continue
        best = found.get(fact.slot)
        if best is None or (fact.created_at, fact.memory_id) > (best.created_at, best.memory_id):
            found[fact.slot] = fact
    return found


_NOT_NAME_WORDS = frozenset({"the", "of", "and", "&", "a", "an", "their"})


def ends_another(fact: ExtractedFact, current_value: str | None) -> bool:
    """Whether ``fact`` ends a value its slot no longer holds: "no longer Brightline Studios" while the slot holds
    "Kestrel Media" tells of an older job, and the current one stands (it is not written). An ending of what the
    slot holds ("no longer Kestrel", matched on the words of the name), of an empty slot, or one that names nothing
    ("left their job") ends the slot as usual."""
    ended = ended_value(fact.relation, fact.value)
    if ended is None or current_value is None:
        return False
    held = ended_value(fact.relation, current_value)
    held_words = set(normalise(held[1] if held else current_value).split()) - _NOT_NAME_WORDS
    return not held_words & (set(normalise(ended[1]).split()) - _NOT_NAME_WORDS)


def _rehearsed(state: MemoryState | None) -> bool:
    return state is not None and state.status == "active" and state.rehearsal is not None


@dataclass(frozen=True)
class FactWrite:
    fact_id: str
    status: Status
    outcome: Literal["written", "deduplicated", "promoted", "erased"]
    """erased: the system re-read a fact the user had erased, and did not write it again."""
    superseded: tuple[str, ...] = ()
    stale_memories: tuple[str, ...] = ()


class FactService:
    def __init__(self, *, store: MemoryStore, embedder: Embedder, ledger: Ledger,
                 auto_active: Iterable[str] = (), profiles: Profiles | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self._ledger = ledger
        self._auto_active = frozenset(auto_active)
        self._profiles = profiles or ProfileSource()

    def write(
        self,
        fact: ExtractedFact,
        *,
        scope: Scope,
        character_id: str,
        user_id: str | None,
        writer: Writer,
        source: Source,
        at: datetime,
        actor: str = "",
        session_id: str = "",
        provenance: Sequence[str] = (),
    ) -> FactWrite:
        """Write ``fact`` on ``writer``'s authority; the audit trail names ``actor`` (who asked: an API key), or the
        writer when there is none."""
        status = status_for(writer, scope, fact.relation, self._auto_active)
        actor = actor or writer
        if writer == "system" and status == "active" and not well_formed(fact):
            # A model's reading of the user's turns without the shape its relation expects (the extractor has
            # already dropped its own): it may be an instruction the user typed, so a reviewer sees it first.
            status = "provisional"
        sentence = stored_sentence(fact.subject, fact.relation, fact.value, said=fact.sentence, writer=writer)
        partition = partition_for(scope, character_id, user_id)
        digest = content_hash(sentence)
        existing = self._store.list_facts(partition)
        states = self._store.get_states([f.memory_id for f in existing])

        for old in existing:  # identical content: the same fact again, not a copy
            assert old.fact is not None
            old_state = states.get(old.memory_id, MemoryState(memory_id=old.memory_id))
            if old.fact.content_hash != digest or old_state.status not in ("active", "provisional"):
                continue
            signals = old_state.signals.model_copy(update={"mentions": old_state.signals.mentions + 1,
                                                           "last_validated": at})
            if old_state.status == "provisional" and status == "active":
                return self._activate(old, old_state.model_copy(update={"signals": signals}), at, actor,
                                      outcome="promoted")
            rehearsal = old_state.rehearsal
            if rehearsal is not None:  # the user said it again: a rehearsed fact moves up a box
                rehearsal = confirmed(rehearsal, at, self._profiles.profile_for(character_id).rehearsal)
            self._store.put_states([old_state.model_copy(update={"signals": signals, "changed_at": at,
                                                                 "rehearsal": rehearsal})])
            self._audit(old, "restated", at, actor, old_state.status)
            if rehearsal is not None:
                self._audit(old, "rehearsal_confirmed", at, actor, old_state.status)
            return FactWrite(fact_id=old.memory_id, status=old_state.status, outcome="deduplicated")

        fact_id = fact_id_for(partition, fact.subject, fact.relation, digest)
        if writer == "system" and self._ledger.suppressed(fact_id, provenance):
            # The user erased this fact, but the turns it came from remain, and a later pass over their session
            # (a late turn, a retried trace) reads them again. The user saying it again (a new turn, or a
            # runtime's write) brings it back; the system re-reading what it was told to forget does not.
            return FactWrite(fact_id=fact_id, status=status, outcome="erased")
        memory = Memory(
            memory_id=fact_id, turn_id="", session_id=session_id, character_id=partition.character_id,
            user_id=partition.user_id, text=sentence, created_at=at, kind="fact", scope=scope,
            fact=FactInfo(subject=fact.subject, relation=fact.relation, value=fact.value, content_hash=digest,
                          source=source, provenance=tuple(provenance)),
        )
        rehearsed = [old for old in existing if old.slot == memory.slot and old.memory_id != fact_id
                     and _rehearsed(states.get(old.memory_id))]
        if status == "active" and rehearsed:
            status = "provisional"  # it contradicts a rehearsed fact: a person decides, the old one stands meanwhile
        state = MemoryState(memory_id=fact_id, status=status, changed_at=at,
                            signals=StrengthSignals(source=source, last_validated=at))
        replaced = self._replacements(memory, existing, states, at) if status == "active" else []
        self._store.write_fact(memory, self._vector(sentence), state, replaced)
        self._audit(memory, "written", at, actor, status)
        if rehearsed and status == "provisional":
            self._file(memory, state, rehearsed[0], "contradiction", at,
                       f"contradicts a rehearsed fact ({rehearsed[0].memory_id}) on its slot")
        if scope == "user" and status == "active":
            self._ticket_conflict(memory, state, at)
        for changed in replaced:
            self._ledger.record(changed.memory_id, partition_key(partition.character_id, partition.user_id),
                                "superseded" if changed.status == "revoked" else "marked_stale", at=at,
                                actor=actor, status=changed.status)
        return FactWrite(
            fact_id=fact_id, status=status, outcome="written",
            superseded=tuple(s.memory_id for s in replaced if s.status == "revoked"),
            stale_memories=tuple(s.memory_id for s in replaced if s.stale),
        )

    def _file(self, memory: Memory, state: MemoryState, counterpart: Memory, kind: ReviewKind, at: datetime,
              reason: str) -> None:
        """A review item about ``memory`` naming ``counterpart``; a contradiction keeps it as a promotion would."""
        if self._ledger.is_pending(memory.memory_id, kind):
            return
        after = (state.model_copy(update={"status": "active"}) if kind == "contradiction"
                 else state.model_copy(update={"overrides_canon": True}))
        filed_in = counterpart.partition if kind == "conflict" else memory.partition
        self._ledger.propose(kind, partition=partition_key(filed_in.character_id, filed_in.user_id), before=state,
                             after=after, score=source_trust_of(state.signals.source) * state.signals.confidence,
                             reason=reason, at=at, counterpart=counterpart.memory_id)
        self._audit(memory, f"{kind}_filed", at, "system", state.status)

    def _ticket_conflict(self, memory: Memory, state: MemoryState, at: datetime) -> None:
        """A user's fact on a slot the character's canon holds (with other content) files a conflict ticket in the
        canon's review queue, naming both; recall keeps speaking canon (``engine.recall.path_a``) until a director
        lets the user's stand for this user (kept) or not (rejected)."""
        canon_partition = partition_for("canon", memory.character_id)
        canon = self._store.list_facts(canon_partition)
        held = current(canon, self._store.get_states([f.memory_id for f in canon])).get(memory.slot)  # type: ignore[arg-type]
        if held is None or held.fact is None or memory.fact is None \
                or held.fact.content_hash == memory.fact.content_hash:
            return
        self._file(memory, state, held, "conflict", at,
                   f"the user's fact contradicts the character's canon on ({memory.fact.subject}, "
                   f"{memory.fact.relation})")

    def active_value(self, partition: Partition, slot: tuple[str, str], *, at: datetime | None = None) -> str | None:
        """The value of the slot's current fact in ``partition`` (as of ``at``), or None when it has none."""
        facts = [f for f in self._store.list_facts(partition) if f.slot == slot and (at is None or f.created_at <= at)]
        found = current(facts, self._store.get_states([f.memory_id for f in facts])).get(slot)
        return found.fact.value if found is not None and found.fact is not None else None

    def promote(self, fact_id: str, partition: Partition, *, at: datetime, actor: str,
                confidence: float | None = None) -> FactWrite:
        """A provisional fact goes active (a reviewer kept it): it now supersedes its slot's active fact. With
        ``confidence`` (the consolidation gate's, so that its base strength starts at the gate's score), validated
        now: its decay starts from the keep."""
        found = [f for f in self._store.list_facts(partition) if f.memory_id == fact_id]
        if not found:
            raise NotFound(f"no fact {fact_id!r}")
        state = self._store.get_states([fact_id]).get(fact_id, MemoryState(memory_id=fact_id))
        if state.status != "provisional":
            raise InvalidInput(f"fact {fact_id!r} is {state.status}, not provisional", field="status")
        if confidence is not None:
            state = state.model_copy(update={"signals": state.signals.model_copy(
                update={"confidence": confidence, "last_validated": at})})
        return self._activate(found[0], state, at, actor, outcome="promoted")

    def _activate(self, fact: Memory, state: MemoryState, at: datetime, actor: str,
                  outcome: Literal["written", "deduplicated", "promoted"]) -> FactWrite:
        existing = self._store.list_facts(fact.partition)
        states = self._store.get_states([f.memory_id for f in existing])
        replaced = self._replacements(fact, [f for f in existing if f.memory_id != fact.memory_id], states, at)
        self._store.write_fact(fact, None, state.model_copy(update={"status": "active", "changed_at": at}),
                               replaced)
        self._audit(fact, "promoted", at, actor, "active")
        return FactWrite(fact_id=fact.memory_id, status="active", outcome=outcome,
                         superseded=tuple(s.memory_id for s in replaced if s.status == "revoked"),
                         stale_memories=tuple(s.memory_id for s in replaced if s.stale))

    def _replacements(self, new: Memory, existing: Sequence[Memory], states: dict[str, MemoryState],
                      at: datetime) -> list[MemoryState]:
        """The states a new active fact changes: every active fact of its slot is revoked and pointed to it,
        and the memories those facts came from are marked stale (pointed to it too)."""
        replaced: list[MemoryState] = []
        sources: list[str] = []
        for old in existing:
            state = states.get(old.memory_id, MemoryState(memory_id=old.memory_id))
            if old.slot != new.slot or state.status != "active" or old.memory_id == new.memory_id:
                continue
            replaced.append(state.model_copy(update={"status": "revoked", "superseded_by": new.memory_id,
                                                     "changed_at": at}))
            assert old.fact is not None
            sources.extend(old.fact.provenance)
        source_states = self._store.get_states(sources) if sources else {}
        for memory_id in dict.fromkeys(sources):
            if not self._store.get_memories([memory_id]):
                continue  # an erased source: nothing to mark
            state = source_states.get(memory_id, MemoryState(memory_id=memory_id))
            replaced.append(state.model_copy(update={"stale": True, "superseded_by": new.memory_id,
                                                     "changed_at": at}))
        return replaced

    def repair(self, partition: Partition, *, at: datetime) -> int:
        """Finish supersessions a crash interrupted (two active facts on a slot): the newest stays; returns how
        many older facts were revoked."""
        facts = self._store.list_facts(partition)
        states = self._store.get_states([f.memory_id for f in facts])
        winners = current(facts, states)
        fixes: list[MemoryState] = []
        for fact in facts:
            state = states.get(fact.memory_id, MemoryState(memory_id=fact.memory_id))
            winner = winners.get(fact.slot) if fact.slot else None
            if state.status == "active" and winner is not None and winner.memory_id != fact.memory_id:
                fixes.append(state.model_copy(update={"status": "revoked", "superseded_by": winner.memory_id,
                                                      "changed_at": at}))
        if fixes:
            self._store.put_states(fixes)
            log.warning("repaired %d interrupted supersessions in %s", len(fixes), partition)
        return len(fixes)

    def _vector(self, sentence: str) -> NDArray[np.float32] | None:
        try:
            vector: NDArray[np.float32] = self._embedder.embed([sentence])[0]
            return vector
        except Exception as exc:  # stored lexical-only; the background backfill embeds it later
            log.warning("embedder failed writing a fact; stored without a vector: %s", exc)
            return None

    def _audit(self, fact: Memory, event: str, at: datetime, actor: str, status: str) -> None:
        assert fact.fact is not None
        self._ledger.record(fact.memory_id, partition_key(fact.character_id, fact.user_id), event, at=at,
                            actor=actor, status=status, names=(fact.fact.subject, fact.fact.relation))

