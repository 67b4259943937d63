"""What every part of the store shares: its connection and collections, the in-process caches, reads by id and
the paged reads of long lists, the ingest clock, and the readiness check behind the fast failure."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar
from uuid import UUID

import httpx
import weaviate
from weaviate import exceptions as wx
from weaviate.classes.query import Filter, FilterReturn, Sort
from weaviate.collections import Collection
from weaviate.outputs.query import Object

from engine.adapters.weaviate.errors import BACKEND, boundary, missing_tenant
from engine.adapters.weaviate.schema import MEMORY_PROPERTIES, Props, memory_from, object_id, tenant_for
from engine.domain.errors import BackendUnavailable
from engine.domain.models import Memory

PAGE = 1000  # objects per read request; Weaviate answers at most QUERY_MAXIMUM_RESULTS (10,000 by default)
KEYSET_PROPERTIES = ("seq", "terms_seq")  # range-indexed integers that long reads page by
CACHED_MEMORIES = 50_000
SNAPSHOT_S = 1.0
"""How long the traces and states a search read with its pool answer ``get_traces`` and ``get_states`` (recall
asks for them right after, for the same memories): while no write by this process came between, and no longer
than this, so another process's trace or state write shows at most this late (a fresh read does otherwise)."""

K = TypeVar("K")
V = TypeVar("V")
Stored = Object[Props, None]


class Lru(Generic[K, V]):
    """A small thread-safe LRU map."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def drop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)

    def split(self, keys: Iterable[K]) -> tuple[dict[K, V], list[K]]:
        """The cached values of ``keys``, and the keys that are not cached (in order)."""
        found: dict[K, V] = {}
        missing: list[K] = []
        for key in keys:
            value = self.get(key)
            if value is None:
                missing.append(key)
            else:
                found[key] = value
        return found, missing


def chunks(items: Sequence[V], size: int) -> Iterator[Sequence[V]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def pages(items: Sequence[V]) -> Iterator[Sequence[V]]:
    """``items`` a read request's worth at a time (``PAGE``, looked up at each call)."""
    return chunks(items, PAGE)


def fetch_by_ids(
    collection: Collection[Props, None], ids: Iterable[UUID], properties: list[str], *,
    include_vector: bool = False,
) -> list[Stored]:
    """Objects by id (the ones that exist), a page at a time. An absent tenant holds nothing."""
    unique = list(dict.fromkeys(ids))
    found: list[Stored] = []
    try:
        for chunk in pages(unique):
            found.extend(collection.query.fetch_objects(
                filters=Filter.by_id().contains_any(list(chunk)), limit=len(chunk),
                return_properties=properties, include_vector=include_vector,
            ).objects)
    except wx.WeaviateQueryError as exc:
        if missing_tenant(exc):
            return []
        raise
    return found


def fetch_all(
    collection: Collection[Props, None], filters: FilterReturn | None, properties: list[str], *,
    sort: str | None = "seq", limit: int | None = None,
) -> list[Stored]:
    """Every object matching the filters, in ``sort`` order, a page at a time. An absent tenant holds nothing.

    Sorted by ``seq`` (or ``terms_seq``), pages are keyset-paginated (greater than the last one seen),
    because offset paging stops at the server's QUERY_MAXIMUM_RESULTS (10,000 by default) and a long-lived
    partition holds more than that. Unsorted reads (small collections) use offsets.
    """
    found: list[Stored] = []
    keyset = sort if sort in KEYSET_PROPERTIES else None
    wanted = properties if keyset is None or keyset in properties else [*properties, keyset]
    last: int | None = None
    try:
        while limit is None or len(found) < limit:
            page = PAGE if limit is None else min(PAGE, limit - len(found))
            where = filters
            if keyset is not None and last is not None:
                after = Filter.by_property(keyset).greater_than(last)
                where = after if filters is None else Filter.all_of([filters, after])
            objects = collection.query.fetch_objects(
                filters=where, limit=page, offset=None if keyset else len(found), return_properties=wanted,
                sort=None if sort is None else Sort.by_property(sort, ascending=True),
            ).objects
            found.extend(objects)
            if len(objects) < page:
                break
            if keyset is not None:
                last = int(objects[-1].properties[keyset])
    except wx.WeaviateQueryError as exc:
        if missing_tenant(exc):
            return []
        raise
    return found


class StoreBase:
    """The state ``WeaviateStore.__init__`` sets up, and the lookups every part of the store uses."""

    _model: str
    _dimension: int
    _ready_url: str
    _probe_timeout_s: float
    _down: bool
    _client: weaviate.WeaviateClient
    _memories: Collection[Props, None]
    _directory: Collection[Props, None]
    _turns: Collection[Props, None]
    _legacy_turns: bool
    _sessions: Collection[Props, None]
    _write_lock: threading.RLock
    _seq_lock: threading.Lock
    _last_seq: int
    _cached_memories: Lru[str, Memory]
    _tenants: Lru[str, str]
    _session_tenants: Lru[str, str]
    _snapshots: Lru[str, tuple[float, int, str | None, str | None]]
    _generation: int

    # -- what a search read of traces and states ----------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The write lock, and a new generation before and after the write: a snapshot taken by a read that
        overlapped a write is never served (it carries the generation the read began with)."""
        with self._write_lock:
            self._generation += 1
            try:
                yield
            finally:
                self._generation += 1

    def _keep_snapshot(self, objects: Iterable[Stored], generation: int) -> None:
        """The ``trace`` and ``state`` a search read of its pool, for ``get_traces`` and ``get_states`` moments
        later in the same recall (see ``SNAPSHOT_S``)."""
        now = time.monotonic()
        for obj in objects:
            props = obj.properties
            self._snapshots.put(props["memory_id"], (now, generation, props.get("trace"), props.get("state")))

    def _from_snapshot(self, memory_ids: Iterable[str], prop: str) -> tuple[dict[str, str | None], list[str]]:
        """The snapshot's ``prop`` of the ids it holds (None: the memory had none), and the ids to read."""
        now, generation = time.monotonic(), self._generation
        found: dict[str, str | None] = {}
        missing: list[str] = []
        for memory_id in dict.fromkeys(memory_ids):
            snap = self._snapshots.get(memory_id)
            if snap is not None and snap[1] == generation and now - snap[0] <= SNAPSHOT_S:
                found[memory_id] = snap[2] if prop == "trace" else snap[3]
            else:
                missing.append(memory_id)
        return found, missing

    def _check_reachable(self, action: str) -> None:
        """While the server is known to be down, answer at once rather than through the client's retries.

        The client retries a gRPC call that finds the server unavailable with exponential backoff, about a
        minute in all, and that is not configurable. The first call to meet an outage pays it; after that
        every call asks the readiness endpoint first (connection refused is instant) until it answers.
        """
        if not self._down:
            return
        try:
            ready = httpx.get(self._ready_url, timeout=self._probe_timeout_s).status_code == 200
        except httpx.HTTPError:
            ready = False
        if not ready:
            raise BackendUnavailable(f"Weaviate is unreachable ({action}): {self._ready_url} does not answer",
                                     backend=BACKEND)
        self._down = False

    def _next_seqs(self, count: int) -> list[int]:
        """Ingest order: increasing within this process, and microseconds since the epoch across processes
        (below 2**53, so the server's number handling cannot reorder it)."""
        with self._seq_lock:
            start = max(self._last_seq + 1, time.time_ns() // 1000)
            self._last_seq = start + count - 1
        return list(range(start, start + count))

    # -- reading helpers ----------------------------------------------------------------------------------

    def _in(self, tenant: str) -> Collection[Props, None]:
        return self._memories.with_tenant(tenant)

    def _remember(self, memory: Memory) -> None:
        self._cached_memories.put(memory.memory_id, memory)
        self._tenants.put(memory.memory_id, tenant_for(memory.partition))

    def _locate(self, memory_ids: Iterable[str]) -> dict[str, str]:
        """Memory id -> tenant, for the ids that exist: the cache first, then the directory."""
        located, unknown = self._tenants.split(dict.fromkeys(memory_ids))
        if unknown:
            for entry in fetch_by_ids(self._directory, (object_id("memory", m) for m in unknown),
                                      ["memory_id", "tenant"]):
                located[entry.properties["memory_id"]] = entry.properties["tenant"]
                self._tenants.put(entry.properties["memory_id"], entry.properties["tenant"])
        return located

    def _objects(
        self, memory_ids: Iterable[str], properties: list[str], *, include_vector: bool = False
    ) -> dict[str, Stored]:
        """Memory id -> stored object, read from each memory's tenant."""
        by_tenant: dict[str, list[UUID]] = defaultdict(list)
        for memory_id, tenant in self._locate(memory_ids).items():
            by_tenant[tenant].append(object_id("memory", memory_id))
        found: dict[str, Stored] = {}
        for tenant, ids in by_tenant.items():
            for obj in fetch_by_ids(self._in(tenant), ids, [*properties, "memory_id"],
                                    include_vector=include_vector):
                found[obj.properties["memory_id"]] = obj
        return found

    def _session_tenant(self, session_id: str) -> str | None:
        tenant = self._session_tenants.get(session_id)
        if tenant is None:
            record = fetch_by_ids(self._sessions, [object_id("session", session_id)], ["tenant"])
            if record and record[0].properties.get("tenant"):
                tenant = str(record[0].properties["tenant"])
                self._session_tenants.put(session_id, tenant)
        return tenant

    def _count_in(self, tenant: str) -> int:
        try:
            total = self._in(tenant).aggregate.over_all(total_count=True).total_count
        except wx.WeaviateQueryError as exc:
            if missing_tenant(exc):
                return 0
            raise
        return int(total or 0)

    @boundary("read memories")
    def get_memories(self, memory_ids: Sequence[str], *, current: bool = False) -> list[Memory]:
        """A memory never changes once stored, so the cache answers, but only a deletion through this process
        clears it: with ``current`` the server answers, and a memory another process erased leaves the cache."""
        if current:
            found: dict[str, Memory] = {}
            missing = list(dict.fromkeys(memory_ids))
        else:
            found, missing = self._cached_memories.split(memory_ids)
        if missing:
            for memory_id, obj in self._objects(missing, MEMORY_PROPERTIES).items():
                found[memory_id] = memory_from(obj.properties)
                self._remember(found[memory_id])
        if current:
            for gone in (m for m in missing if m not in found):
                self._cached_memories.drop(gone)
        return [found[m] for m in memory_ids if m in found]
