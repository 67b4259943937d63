"""The write half of the MemoryStore port: turns, memories, vectors, traces and states, facts, session flags,
and erasure (deleting memories, with their words in the next turn's ``preceding``, and a partition's turns).

Every write keeps this process's stage-one statistics current (``TermStatistics.note``) and drops the tenant's
cached tone candidates when it changes them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from uuid import UUID

import numpy as np
from numpy.typing import NDArray
from weaviate import exceptions as wx
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, FilterReturn
from weaviate.collections import Collection

from engine.adapters.weaviate.base import StoreBase, fetch_all, fetch_by_ids, pages
from engine.adapters.weaviate.errors import boundary, check_deleted, check_inserted
from engine.adapters.weaviate.schema import (
    MEMORY_PROPERTIES,
    TURN_SCHEMA,
    Props,
    indexed_terms,
    memory_from,
    memory_properties,
    object_id,
    state_properties,
    tenant_for,
    trace_properties,
)
from engine.adapters.weaviate.search import KEEP, TermStatistics, trace_tone
from engine.domain.errors import InvalidInput, NotFound
from engine.domain.models import Memory, MemoryState, Partition, Trace, TraceStatus, Turn


class Writes(StoreBase):
    """Writes are serialised within the process by ``_write_lock``."""

    _statistics: TermStatistics

    def _claim_sessions(self, owners: Mapping[str, Partition]) -> None:
        """Record each session's owner (a session belongs to one partition for good)."""
        unknown = {}
        for session_id, partition in owners.items():
            tenant = tenant_for(partition)
            known = self._session_tenants.get(session_id)
            if known is None:
                unknown[session_id] = (tenant, partition)
            elif known != tenant:
                raise InvalidInput(f"session {session_id!r} already belongs to another character or user",
                                   field="session_id")
        if not unknown:
            return
        records = {r.properties["session_id"]: r for r in fetch_by_ids(
            self._sessions, (object_id("session", s) for s in unknown), ["session_id", "tenant"])}
        fresh = []
        for session_id, (tenant, partition) in unknown.items():
            record = records.get(session_id)
            owner = {"tenant": tenant, "character_id": partition.character_id, "user_id": partition.user_id}
            if record is None:
                fresh.append(DataObject(properties={"session_id": session_id, **owner, "closed": False,
                                                    "pending": False}, uuid=object_id("session", session_id)))
            elif not record.properties.get("tenant"):  # closed before any turn arrived: claim it now
                self._sessions.data.update(uuid=object_id("session", session_id), properties=owner)
            elif record.properties["tenant"] != tenant:
                raise InvalidInput(f"session {session_id!r} already belongs to another character or user",
                                   field="session_id")
        if fresh:
            check_inserted(self._sessions.data.insert_many(fresh), "sessions")
        for session_id, (tenant, _) in unknown.items():
            self._session_tenants.put(session_id, tenant)

    def _update_session(self, session_id: str, properties: Props) -> None:
        uuid = object_id("session", session_id)
        try:
            self._sessions.data.update(uuid=uuid, properties=properties)
        except wx.UnexpectedStatusCodeError as exc:
            if exc.status_code != 404:
                raise
            # A session closed before any of its turns arrived: recorded without an owner until they do.
            record = {"session_id": session_id, "tenant": "", "character_id": "", "user_id": "", "closed": False,
                      "pending": False}
            check_inserted(self._sessions.data.insert_many([DataObject(properties={**record, **properties},
                                                                        uuid=uuid)]), "sessions")

    def _refresh_pending(self, sessions: Mapping[str, str], pending: set[str]) -> None:
        """Keep each session's pending flag true exactly while one of its traces is pending."""
        for session_id, tenant in sessions.items():
            still = session_id in pending or bool(fetch_all(
                self._in(tenant),
                Filter.all_of([Filter.by_property("session_id").equal(session_id),
                               Filter.by_property("trace_status").equal(TraceStatus.PENDING.value)]),
                ["memory_id"], sort=None, limit=1,
            ))
            self._update_session(session_id, {"pending": still})

    @boundary("store turns")
    def add_turns(self, turns: Sequence[Turn]) -> list[bool]:
        if not turns:
            return []
        with self._writing():
            stored = {obj.uuid for obj in fetch_by_ids(self._turns, (object_id("turn", t.turn_id) for t in turns),
                                                       ["turn_id"])}
            new: list[bool] = []
            fresh: list[Turn] = []
            for turn in turns:
                uuid = object_id("turn", turn.turn_id)
                new.append(uuid not in stored)
                if uuid not in stored:
                    stored.add(uuid)
                    fresh.append(turn)
            if fresh:
                self._claim_sessions({t.session_id: Partition(character_id=t.character_id, user_id=t.user_id)
                                      for t in fresh})
                objects = [
                    DataObject(properties={
                        "turn_id": t.turn_id, "session_id": t.session_id, "character_id": t.character_id,
                        "user_id": t.user_id, "role": t.role, "text": t.text, "timestamp": t.timestamp,
                        "seq": seq,
                        "tenant": tenant_for(Partition(character_id=t.character_id, user_id=t.user_id)),
                    }, uuid=object_id("turn", t.turn_id))
                    for t, seq in zip(fresh, self._next_seqs(len(fresh)), strict=True)
                ]
                check_inserted(self._turns.data.insert_many(objects), "turns")
        return new

    def _check_vectors(self, count: int, vectors: NDArray[np.float32], field: str) -> None:
        if len(vectors) != count:
            raise InvalidInput(f"{count} {field} but {len(vectors)} vectors", field="vectors")
        if count and (vectors.ndim != 2 or vectors.shape[1] != self._dimension):
            raise InvalidInput(f"vectors are {vectors.shape[-1]}-d, the store holds {self._dimension}-d",
                               field="vectors")

    @boundary("store memories")
    def add_memories(self, memories: Sequence[Memory], vectors: NDArray[np.float32] | None) -> None:
        if vectors is not None:
            self._check_vectors(len(memories), vectors, "memories")
        if not memories:
            return
        with self._writing():
            stored = {obj.uuid for obj in fetch_by_ids(
                self._directory, (object_id("memory", m.memory_id) for m in memories), ["memory_id"])}
            fresh: list[int] = []
            for i, memory in enumerate(memories):
                uuid = object_id("memory", memory.memory_id)
                if uuid not in stored:
                    stored.add(uuid)
                    fresh.append(i)
            if not fresh:
                return
            self._claim_sessions({memories[i].session_id: memories[i].partition for i in fresh})
            self._insert([(memories[i], None if vectors is None else vectors[i], None) for i in fresh])

    def _insert(self, entries: Sequence[tuple[Memory, NDArray[np.float32] | None, MemoryState | None]]) -> None:
        """Store new memories (with their vector and state, when they have one) and their directory entries."""
        seqs = self._next_seqs(len(entries))
        by_tenant: dict[str, list[DataObject[Props, None]]] = defaultdict(list)
        for (memory, vector, state), seq in zip(entries, seqs, strict=True):
            by_tenant[tenant_for(memory.partition)].append(DataObject(
                properties=memory_properties(memory, seq, state), uuid=object_id("memory", memory.memory_id),
                vector=None if vector is None else np.asarray(vector, dtype=np.float32).tolist(),
            ))
        for tenant, objects in by_tenant.items():
            check_inserted(self._in(tenant).data.insert_many(objects), "memories")
        # The directory entry last: it is what says a memory is stored, so a write that fails halfway is
        # redone in full when the memory is sent again.
        check_inserted(self._directory.data.insert_many([
            DataObject(properties={
                "memory_id": memory.memory_id, "tenant": tenant_for(memory.partition), "seq": seq,
                "has_vector": vector is not None,
            }, uuid=object_id("memory", memory.memory_id))
            for (memory, vector, _), seq in zip(entries, seqs, strict=True)
        ]), "memories (directory)")
        for memory, _, _ in entries:
            self._remember(memory)
        for tenant in by_tenant:
            self._statistics.note(tenant, [(memory.memory_id, indexed_terms(memory, ()), KEEP, seq,
                                            memory.created_at.timestamp())
                                           for (memory, _, _), seq in zip(entries, seqs, strict=True)
                                           if tenant_for(memory.partition) == tenant])

    @boundary("store vectors")
    def set_vectors(self, memory_ids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        self._check_vectors(len(memory_ids), vectors, "ids")
        with self._writing():
            located = self._locate(memory_ids)
            for memory_id, vector in zip(memory_ids, vectors, strict=True):
                tenant = located.get(memory_id)
                if tenant is None:
                    continue  # as in the embedded store: an id that is not stored is ignored
                uuid = object_id("memory", memory_id)
                try:
                    self._in(tenant).data.update(uuid=uuid, vector=np.asarray(vector, dtype=np.float32).tolist())
                    self._directory.data.update(uuid=uuid, properties={"has_vector": True})
                except wx.UnexpectedStatusCodeError as exc:
                    if exc.status_code != 404:  # 404: deleted since it was located
                        raise

    @boundary("store traces")
    def put_traces(self, traces: Sequence[Trace]) -> None:
        if not traces:
            return
        with self._writing():
            memories = {m.memory_id: m for m in self.get_memories([t.memory_id for t in traces])}
            for trace in traces:
                if trace.memory_id not in memories:
                    raise NotFound(f"no memory {trace.memory_id!r} to write a trace beside")
            sessions: dict[str, str] = {}
            pending: set[str] = set()
            latest = {t.memory_id: t for t in traces}  # the last trace per memory wins
            for trace, terms_seq in zip(latest.values(), self._next_seqs(len(latest)), strict=True):
                memory = memories[trace.memory_id]
                tenant = tenant_for(memory.partition)
                properties = trace_properties(trace, memory, terms_seq)
                self._in(tenant).data.update(uuid=object_id("memory", memory.memory_id), properties=properties)
                self._statistics.note(tenant, [(memory.memory_id, properties["terms"], trace_tone(trace, memory),
                                                None, memory.created_at.timestamp())])
                sessions[memory.session_id] = tenant
                if trace.status is TraceStatus.PENDING:
                    pending.add(memory.session_id)
            self._refresh_pending(sessions, pending)

    @boundary("mark a session closed")
    def mark_session_closed(self, session_id: str, closed_at: datetime) -> None:
        with self._writing():
            self._update_session(session_id, {"closed": True, "closed_at": closed_at})

    @boundary("delete memories")
    def delete_memories(self, memory_ids: Sequence[str]) -> None:
        """Forget memories and their traces (their turns stay). Ids that are not stored are ignored."""
        with self._writing():
            memories = self.get_memories(memory_ids)
            by_tenant: dict[str, list[UUID]] = defaultdict(list)
            sessions: dict[str, str] = {}
            for memory in memories:
                by_tenant[tenant_for(memory.partition)].append(object_id("memory", memory.memory_id))
                sessions[memory.session_id] = tenant_for(memory.partition)
            for tenant, ids in by_tenant.items():
                for chunk in pages(ids):
                    check_deleted(self._in(tenant).data.delete_many(
                        where=Filter.by_id().contains_any(list(chunk))))
            for memory in memories:
                self._statistics.note(tenant_for(memory.partition), [(memory.memory_id, None, None, None, None)])
            self._forget_preceding(memories)
            ids = [object_id("memory", m.memory_id) for m in memories]
            for chunk in pages(ids):
                check_deleted(self._directory.data.delete_many(where=Filter.by_id().contains_any(list(chunk))))
            for memory in memories:
                self._cached_memories.drop(memory.memory_id)
                self._tenants.drop(memory.memory_id)
            self._refresh_pending(sessions, set())

    def _forget_preceding(self, deleted: Sequence[Memory]) -> None:
        """A forgotten turn's words leave the lexical document of the turn after it too: the memories of its
        session that kept it as ``preceding`` lose it, and their ``terms`` with it."""
        said: dict[tuple[str, str], set[str]] = defaultdict(set)
        for memory in deleted:
            said[(tenant_for(memory.partition), memory.session_id)].add(memory.text)
        for (tenant, session_id), texts in said.items():
            after = [obj for obj in fetch_all(self._in(tenant), Filter.by_property("session_id").equal(session_id),
                                              [*MEMORY_PROPERTIES, "trace"])
                     if obj.properties.get("preceding") and obj.properties["preceding"] in texts]
            for obj, terms_seq in zip(after, self._next_seqs(len(after)), strict=True):
                memory = memory_from(obj.properties).model_copy(update={"preceding": ""})
                facts = Trace.model_validate_json(obj.properties["trace"]).facts if obj.properties.get("trace") else ()
                indexed = indexed_terms(memory, facts)
                self._in(tenant).data.update(uuid=obj.uuid, properties={"preceding": "", "terms": indexed,
                                                                        "terms_seq": terms_seq})
                self._statistics.note(tenant, [(memory.memory_id, indexed, KEEP, None, memory.created_at.timestamp())])
                self._remember(memory)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @boundary("store states")
    def put_states(self, states: Sequence[MemoryState]) -> None:
        if not states:
            return
        with self._writing():
            self._put_states(states)

    def _put_states(self, states: Sequence[MemoryState]) -> None:
        """Every memory is looked up before anything is written: a missing one fails the call with no change."""
        latest = {state.memory_id: state for state in states}  # the last state per memory wins
        if not latest:
            return
        memories = {m.memory_id: m for m in self.get_memories(list(latest))}
        missing = [memory_id for memory_id in latest if memory_id not in memories]
        if missing:
            raise NotFound(f"no memory {missing[0]!r} to set the state of")
        for memory_id, state in latest.items():
            tenant = tenant_for(memories[memory_id].partition)
            try:
                self._in(tenant).data.update(uuid=object_id("memory", memory_id), properties=state_properties(state))
            except wx.UnexpectedStatusCodeError as exc:
                if exc.status_code != 404:
                    raise
                self._cached_memories.drop(memory_id)  # deleted by another process since it was cached
                self._tenants.drop(memory_id)
                raise NotFound(f"no memory {memory_id!r} to set the state of") from exc

    @boundary("store a fact")
    def write_fact(self, fact: Memory, vector: NDArray[np.float32] | None, state: MemoryState,
                   replaced: Sequence[MemoryState]) -> None:
        """The new fact first (object, state and directory entry), then the states it replaces.

        Weaviate has no transaction across objects, so the order is what keeps a crash safe: one between the
        two steps leaves the new fact active beside the fact it should have revoked (and its sources not yet
        stale), never a revoked fact with no successor; readers keep the newest active fact of each slot
        (``engine.facts.current``), and the next write on the slot revokes both. What the fact replaces is
        looked up before anything is written, so a missing memory fails the call with no change.
        """
        if fact.kind != "fact" or fact.fact is None:
            raise InvalidInput(f"memory {fact.memory_id!r} is not a fact", field="kind")
        if state.memory_id != fact.memory_id:
            raise InvalidInput(f"the state is for {state.memory_id!r}, not the fact {fact.memory_id!r}",
                               field="state")
        if vector is not None and (vector.ndim != 1 or vector.shape[0] != self._dimension):
            raise InvalidInput(f"the vector is {vector.shape}, the store holds {self._dimension}-d",
                               field="vector")
        with self._writing():
            others = list(dict.fromkeys(s.memory_id for s in replaced if s.memory_id != fact.memory_id))
            found = {m.memory_id for m in self.get_memories(others)}
            missing = [memory_id for memory_id in others if memory_id not in found]
            if missing:
                raise NotFound(f"no memory {missing[0]!r} to set the state of")
            if fact.memory_id in self._locate([fact.memory_id]):
                self._put_states([state])  # sent again: the stored content stays, the state is the new one
            else:
                self._insert([(fact, vector, state)])
            self._before_replacing(fact)
            self._put_states(replaced)

    def _before_replacing(self, fact: Memory) -> None:
        """A seam for crash-injection tests: runs between writing a new fact and revoking what it replaces."""

    @boundary("delete turns")
    def delete_turns(self, partition: Partition, turn_ids: Sequence[str] | None = None) -> list[str]:
        tenant = tenant_for(partition)
        with self._writing():
            if turn_ids is not None:
                found = [t for t in fetch_by_ids(self._turns, (object_id("turn", i) for i in turn_ids),
                                                 [p.name for p in TURN_SCHEMA])
                         if (t.properties["character_id"], t.properties["user_id"])
                         == (partition.character_id, partition.user_id)]
                for chunk in pages([t.uuid for t in found]):
                    check_deleted(self._turns.data.delete_many(where=Filter.by_id().contains_any(list(chunk))))
                return [str(t.properties["turn_id"]) for t in found]
            wheres = [Filter.by_property("tenant").equal(tenant)]
            if self._legacy_turns:
                # Turns stored before they recorded their tenant: through the sessions the partition owns (a
                # session belongs to the partition of its first turn for good). A scan, but erasure is rare.
                owned = [obj.properties["session_id"]
                         for obj in self._sessions.iterator(return_properties=["session_id", "tenant"])
                         if obj.properties.get("tenant") == tenant]
                wheres += [Filter.by_property("session_id").contains_any(list(chunk))
                           for chunk in pages(owned)]
            deleted: list[str] = []
            for where in wheres:
                ids = [str(t.properties["turn_id"]) for t in fetch_all(self._turns, where, ["turn_id"])]
                self._delete_all(self._turns, where)
                deleted.extend(ids)
        return list(dict.fromkeys(deleted))

    def purge(self) -> None:
        """Nothing to do from here: deleted objects leave Weaviate's API at once, and its segments compact on
        their own schedule (the server's files are its operator's to manage)."""

    @staticmethod
    def _delete_all(collection: Collection[Props, None], where: FilterReturn) -> int:
        """Delete every match (one request deletes at most QUERY_MAXIMUM_RESULTS); how many were deleted."""
        deleted = 0
        while True:
            result = collection.data.delete_many(where=where)
            check_deleted(result)
            deleted += result.successful
            if not result.successful:
                return deleted
