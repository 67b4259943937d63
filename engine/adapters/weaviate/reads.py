"""The read half of the MemoryStore port (besides search): turns, a session's memories, lists, vectors, traces,
states, facts, tone candidates, sessions and counts. Long lists are read a page at a time in ingest order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from weaviate import exceptions as wx
from weaviate.classes.query import Filter, Sort

from engine.adapters.weaviate.base import StoreBase, fetch_all, fetch_by_ids
from engine.adapters.weaviate.errors import boundary, missing_tenant
from engine.adapters.weaviate.schema import (
    MEMORY_PROPERTIES,
    TURN_SCHEMA,
    memory_from,
    object_id,
    tenant_for,
    turn_from,
)
from engine.adapters.weaviate.search import TermStatistics
from engine.domain.models import Memory, MemoryState, Partition, Trace, Turn
from engine.domain.ports import ToneCandidates

Record = TypeVar("Record", Trace, MemoryState)

TONE_CACHE_S = 10.0
"""How old the tenant's last catch-up read may be for ``tone_candidates`` to answer without one: this process's
writes count at once, other processes' at the next search (or within this long)."""


class Reads(StoreBase):
    """Reads by session, partition and id; what is read by id is remembered in the in-process caches."""

    _statistics: TermStatistics

    @boundary("read turns")
    def find_turns(self, turn_ids: Sequence[str]) -> dict[str, Turn]:
        found = fetch_by_ids(self._turns, (object_id("turn", i) for i in turn_ids), [p.name for p in TURN_SCHEMA])
        return {str(t.properties["turn_id"]): turn_from(t.properties) for t in found}

    @boundary("read turns")
    def get_turns(self, session_id: str) -> list[Turn]:
        found = fetch_all(self._turns, Filter.by_property("session_id").equal(session_id),
                          [p.name for p in TURN_SCHEMA])
        return [turn_from(obj.properties) for obj in found]

    @boundary("read a session's memories")
    def session_memories(self, session_id: str) -> list[Memory]:
        tenant = self._session_tenant(session_id)
        if tenant is None:
            return []
        # A session's turns, not the facts distilled from it (``!=``: objects stored before ``record_kind``
        # existed have none, and are turns).
        found = fetch_all(self._in(tenant), Filter.all_of([
            Filter.by_property("session_id").equal(session_id),
            Filter.by_property("record_kind").not_equal("fact"),
        ]), MEMORY_PROPERTIES)
        memories = [memory_from(obj.properties) for obj in found]
        for memory in memories:
            self._remember(memory)
        return memories

    @boundary("list memories")
    def list_memories(self, partition: Partition, *, offset: int, limit: int) -> list[Memory]:
        tenant = tenant_for(partition)
        try:
            found = self._in(tenant).query.fetch_objects(
                limit=limit, offset=offset, return_properties=MEMORY_PROPERTIES,
                sort=Sort.by_property("seq", ascending=True),
            ).objects
        except wx.WeaviateQueryError as exc:
            if missing_tenant(exc):
                return []
            raise
        return [memory_from(obj.properties) for obj in found]

    @boundary("read vectors")
    def get_vectors(self, memory_ids: Sequence[str]) -> NDArray[np.float32]:
        out = np.full((len(memory_ids), self._dimension), np.nan, dtype=np.float32)
        if not memory_ids:
            return out
        found = self._objects(memory_ids, [], include_vector=True)
        for row, memory_id in enumerate(memory_ids):
            obj = found.get(memory_id)
            vectors = None if obj is None else obj.vector
            if vectors:
                out[row] = np.asarray(next(iter(vectors.values())), dtype=np.float32)
        return out

    @boundary("read traces")
    def get_traces(self, memory_ids: Sequence[str]) -> dict[str, Trace]:
        return self._records(memory_ids, "trace", Trace)

    def _records(self, memory_ids: Sequence[str], prop: Literal["trace", "state"],
                 model: type[Record]) -> dict[str, Record]:
        """The traces or states (the JSON property ``prop``) of ``memory_ids`` that have one, by memory id."""
        if not memory_ids:
            return {}
        known, missing = self._from_snapshot(memory_ids, prop)
        if missing:
            read = self._objects(missing, [prop])
            known.update((memory_id, obj.properties.get(prop)) for memory_id, obj in read.items())
        return {memory_id: model.model_validate_json(value) for memory_id, value in known.items() if value}

    @boundary("read unembedded memories")
    def unembedded(self, limit: int) -> list[Memory]:
        entries = fetch_all(self._directory, Filter.by_property("has_vector").equal(False),
                            ["memory_id", "tenant"], limit=limit)
        for entry in entries:
            self._tenants.put(entry.properties["memory_id"], entry.properties["tenant"])
        ids = [entry.properties["memory_id"] for entry in entries]
        memories = self.get_memories(ids)
        if len(memories) < len(ids):
            # Entries whose memory is gone (deleted, or its write failed) would hold the queue's head forever.
            alive = {m.memory_id for m in memories}
            with self._write_lock:
                for memory_id in ids:
                    if memory_id not in alive:
                        self._directory.data.delete_by_id(object_id("memory", memory_id))
                        self._tenants.drop(memory_id)
        return memories

    @boundary("read states")
    def get_states(self, memory_ids: Sequence[str]) -> dict[str, MemoryState]:
        return self._records(memory_ids, "state", MemoryState)

    @boundary("list facts")
    def list_facts(self, partition: Partition) -> list[Memory]:
        found = fetch_all(self._in(tenant_for(partition)), Filter.by_property("record_kind").equal("fact"),
                          MEMORY_PROPERTIES)
        facts = [memory_from(obj.properties) for obj in found]
        for fact in facts:
            self._remember(fact)
        return facts

    @boundary("read tone candidates")
    def tone_candidates(
        self, partition: Partition, *, min_intensity: float, max_valence: float
    ) -> ToneCandidates:
        """From stage one's statistics of the tenant (``search.TermStatistics``), which hold every memory's tone
        row: no read of the partition. They are caught up by every search (recall searches just before), and
        here too when the last catch-up is older than ``TONE_CACHE_S``."""
        tenant = tenant_for(partition)
        stats = self._statistics.fresh(tenant, TONE_CACHE_S, lambda: self._count_in(tenant))
        candidates, built = self._statistics.tone(stats, min_intensity, max_valence)
        if built:
            for memory_id in candidates.memory_ids:
                self._tenants.put(memory_id, tenant)
        return candidates

    @boundary("read pending sessions")
    def pending_sessions(self) -> list[str]:
        found = fetch_all(self._sessions, Filter.all_of([Filter.by_property("closed").equal(True),
                                                         Filter.by_property("pending").equal(True)]),
                          ["session_id"], sort=None)
        return sorted(obj.properties["session_id"] for obj in found)

    @boundary("read closed sessions")
    def closed_sessions(self, session_ids: Sequence[str]) -> set[str]:
        found = fetch_by_ids(self._sessions, (object_id("session", s) for s in session_ids), ["session_id", "closed"])
        return {obj.properties["session_id"] for obj in found if obj.properties.get("closed")}

    @boundary("count memories")
    def count(self, partition: Partition) -> int:
        return self._count_in(tenant_for(partition))

    @boundary("count all memories")
    def total(self) -> int:
        # The directory holds one entry a memory of every tenant (and loses it with the memory).
        return int(self._directory.aggregate.over_all(total_count=True).total_count or 0)
