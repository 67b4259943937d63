"""The Weaviate store (weaviate-client v4): the same port as the embedded default; Weaviate picks stage one's pool.

Collections (``{P}`` is the collection prefix, ``Feltsense`` by default)
    ``{P}Memory_<model>_<dim>``  memories and their traces, self-provided vectors (cosine, flat index), one
                                 collection per embedding model and dimension; its description records the
                                 exact model id and dimension and is checked at startup, so a 384-d and a
                                 1024-d index never mix (two model ids with the same slug are refused too).
                                 Multi-tenant: one tenant per (character, user) partition.
    ``{P}MemoryDirectory_<model>_<dim>``  one small object per memory: its tenant, ingest sequence and whether
                                 it has a vector yet. Not multi-tenant.
    ``{P}Turn``, ``{P}Session``  the turns, and each session's owner, closed time and pending-trace flag.
                                 Not multi-tenant.

Multi-tenancy, and why only memories use it
    Memories are what recall searches, so they get the isolation: a tenant per partition, created
    automatically on first write. A query names its tenant in the request, so a search cannot reach another
    user's memories even if a filter were forgotten; each tenant is its own shard, so its vector index and
    inverted index are the partition's own, as the embedded store's per-partition indexes are (stage one's
    statistics are counted per tenant too, below); deleting a user is deleting a tenant, and idle tenants can be
    offloaded. Turns, sessions and the directory are not multi-tenant because the port looks them up by ids
    alone (``get_turns(session_id)``, ``get_memories(ids)``, ``pending_sessions()``, ``unembedded()``), ids
    are global as in the embedded store (a turn id is stored once, whoever sends it), and they are never
    searched. The directory is how an id-only call finds a memory's tenant; the ids recall and the writer use
    were almost always seen moments before (by ``search``, ``tone_candidates`` or ``session_memories``), so
    an in-process cache answers first and memories are served from it (their content never changes; only a
    deletion clears the ``preceding`` of the turn after, which another process's cache may show until evicted).

Stage one: Weaviate chooses the pool, the engine ranks it
    ``search`` returns raw leg material (``engine.domain.ports.LegScores``) and ``engine.retrieval.rank`` ranks it
    with ``scoring.fusion``: the same code, fed the same numbers, as for the embedded store. Nothing Weaviate
    scores decides a rank; it decides only which memories are looked at.

    The pool is one hybrid query: BM25 over the ``terms`` property with the distinct query terms (space
    separated) plus the query vector, relative-score fusion, ``alpha`` = ``vector_weight`` (kept strictly
    between 0 and 1, where Weaviate would skip a leg; BM25 alone without a query vector), the partition as
    the tenant and what recall may not see filtered out (``_visible``: the caller's current session, the
    future, provisional and revoked memories, archived ones unless ``include_archived``), and
    ``params.candidates * POOL_FACTOR`` results. No ``max_vector_distance``: Weaviate drops every hybrid
    result that is not among the vector hits when it is set (weaviate/weaviate#5664, #10350), which would
    lose lexical-only hits, among them every memory stored while the embedder was down. Rows are returned in
    ingest order (``seq``), which breaks ranking ties, as in the embedded store.

    Per pool memory: its cosine is the vector leg's original score in ``explain_score`` (NaN where the result
    was not a vector-leg result: it has no vector, or only the lexical leg found it); its term frequencies
    and document length are counted here from its ``terms`` property, which holds ``engine.domain.text.terms`` of
    the memory's text, of the turn before it (``Memory.preceding``) and of each distinct fact sentence of its
    trace: the very terms the embedded store indexes. So BM25 is computed in ``scoring.fusion`` with the
    profile's ``bm25_k1`` and ``bm25_b`` on both backends; the collection's own BM25 settings (the profile
    defaults) only shape which memories enter the pool.

    The backends differ only in the pool of a large partition. The embedded store's pool holds every memory
    a query term occurs in and the best ``candidates * POOL_FACTOR`` by cosine, each with its cosine; here it
    is Weaviate's best ``candidates * POOL_FACTOR`` by its own fused score (each leg brings at least
    max(100, that many) before the cut), so a weak lexical match can stay out, and a lexical match the vector
    leg did not reach has no cosine (so the lexical-only cap applies to it). While a partition's visible
    memories fit in the pool, the pools are the same (the contract tests check it). Measured at 10,000
    memories (DailyDialog lines with MiniLM, 200 queries with a window): 89% of the embedded store's top 40
    are in this store's top 40 and the best candidate is the same for 199 of 200; of the misses, 29% are in
    the pool without a cosine (reading their vectors too would cost about 10 ms a query), the rest outside it.

Stage one's partition statistics: an in-process cache per tenant
    BM25 needs each query term's document frequency over the partition, the number of documents and the
    average document length; like the embedded store, they count every memory of the partition whatever its
    status or time, over ``terms``. Weaviate does not expose a term's document frequency, so each tenant
    searched gets a ``_TenantTerms`` in this process: every memory's ``terms`` as stored, each term's
    document frequency and the total length (about 220 bytes a memory; at most ``STATS_CACHED_DOCUMENTS``
    memories over all tenants, the least recently searched tenant evicted first). It is built on the
    tenant's first search by reading every object's ``terms`` with the cursor (0.5 s at 10,000 memories;
    concurrent first searches of a tenant wait for one read), and kept current four ways:

    - this process's writes change it as they are made: new memories and facts, trace writes (which add the
      facts' terms), deletions (which is how erasure forgets) and what they clear from the next turn's
      ``preceding``;
    - every search asks for the tenant's object count (one aggregate) and reads back the objects whose
      ``terms`` were written since the last read: every write of ``terms`` also writes ``terms_seq``, on the
      same clock as ``seq`` (microseconds) and range-indexed, so that is one small filtered query. It reaches
      back ``SETTLE_S`` before now while the newest write it saw is that recent, for writes that commit late
      or come from a clock a little behind;
    - the memories a search returns refresh their own entries from what came back;
    - when the count still differs after the catch-up (another process deleted memories), and every
      ``STATS_REREAD_S`` in any case, a background thread reads the tenant again in full; searches keep the
      statistics they have meanwhile. Every read is reconciled with this process's writes made during it by
      replaying them on what it read (the updates are idempotent), so none is lost.

    Staleness bound: this process's writes count at once; another process's new memories and trace writes
    count at its next search here (given clocks within ``SETTLE_S`` of each other); its deletions once the
    background read they trigger ends (about 0.5 s at 10,000 memories); anything else (a writer of a release
    without ``terms_seq``, a clock further off) within ``STATS_REREAD_S`` plus one read. Measured at 10,000
    memories (2 cores, server on the same machine): the count and the catch-up read cost 1.4 ms a search
    (median). The alternative, counting document frequencies per query with one batched GraphQL request of
    filtered aggregates, took 5.6 ms for 8 query terms and 7.6 ms for 19 (a message with its window), grows
    with the terms, and would need a filterable copy of ``terms`` and a backfill of every stored object.

    ``excluded_current_session`` is counted from the caller's current session's memories (one read of their
    status and time, filtered by ``session_id``), by the same time and status rules as the pool.

Writes
    Object ids are ``generate_uuid5`` of the turn, memory or session id, so a re-sent turn or memory maps
    to the object already stored; it is skipped, never duplicated, and never overwrites a memory's trace.
    New objects go in with ``insert_many`` (one synchronous batch request per collection and tenant; any
    object in its ``errors`` raises ``BackendRejected``; the client's background batcher costs ~50 ms a
    call for the handful of objects a turn brings). Traces, vectors and session flags are partial updates
    (PATCH) of single objects, so two processes writing a trace and a vector to the same memory never
    overwrite each other. Writes are serialised within the process by one lock.

Reads
    Lists (a session's turns or memories, tone candidates, the substring fallback's matches) are read a page
    at a time in ingest order, up to the server's ``QUERY_MAXIMUM_RESULTS`` (10,000 by default) per list.
    ``delete_memories`` forgets memories with their traces and states, and their words in the ``preceding``
    of the turn after them; their turns stay.

Lifecycle: states, facts, erasure
    A memory's record kind (``record_kind``: turn or fact; ``kind`` is the trace's emotional/factual kind),
    scope and a fact's slot and provenance (``fact``, JSON) are properties of its object, and so is its
    state: ``status`` (filterable) and the whole ``MemoryState`` as JSON (``state``, present once a state
    was written; ``get_states`` answers only those). Neither JSON is searchable: BM25 reads ``terms`` alone.
    New memories are stored with status ``active``; objects stored before ``status`` existed have none, so
    search and the substring fallback filter out the statuses they must not see (provisional, revoked, and
    archived unless ``include_archived``) rather than asking for ``active``. Tone candidates do not look at
    status: an archived grief keeps its standing rule.

    ``write_fact`` has no transaction to lean on. It writes the new fact (object with its state, then its
    directory entry) first and the states it replaces after, so a crash between leaves two active facts in a
    slot, which readers resolve by keeping the newest (``engine.facts.current``), never a revoked fact with
    no successor. Everything it and ``put_states`` write to is looked up first, so a missing memory raises
    ``NotFound`` before anything is written. ``delete_turns`` deletes by the turns' ``tenant`` property;
    turns stored before that property existed are found through the sessions the partition owns.

Schema changes
    A collection made by an earlier release gets the properties it lacks added at startup with this schema's
    index settings (Weaviate's auto-schema would make a text property a searchable word-tokenised one).

Errors
    Every vendor error is translated at the boundary: unreachable, timed out or unavailable ->
    ``BackendUnavailable``; anything else Weaviate refuses -> ``BackendRejected``. The client retries a gRPC
    call that finds the server unavailable for about a minute (not configurable), so once one call has met
    an outage, every call first asks the readiness endpoint and fails at once until the server answers.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

import httpx
import numpy as np
import weaviate
from numpy.typing import NDArray
from weaviate import exceptions as wx
from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    StopwordsPreset,
    Tokenization,
    VectorDistances,
    Vectorizers,
)
from weaviate.classes.data import DataObject
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.classes.query import Filter, FilterReturn, HybridFusion, MetadataQuery, Sort
from weaviate.collections import Collection
from weaviate.outputs.batch import BatchObjectReturn
from weaviate.outputs.data import DeleteManyReturn
from weaviate.outputs.query import Object
from weaviate.util import generate_uuid5

from engine.domain.errors import (
    BackendRejected,
    BackendUnavailable,
    ConfigurationError,
    FeltsenseError,
    InvalidInput,
    NotFound,
)
from engine.domain.models import (
    Candidate,
    FactInfo,
    Leg,
    Memory,
    MemoryKind,
    MemoryState,
    Partition,
    Trace,
    TraceStatus,
    Turn,
)
from engine.domain.ports import LegScores, ToneCandidates
from engine.domain.text import terms, words
from engine.domain.tuning import RetrievalParams

BACKEND = "weaviate"
PREFIX_PATTERN = re.compile(r"[A-Z][A-Za-z0-9]*")
PAGE = 1000  # objects per read request; Weaviate answers at most QUERY_MAXIMUM_RESULTS (10,000 by default)
POOL_FACTOR = 3  # stage one's pool is this many times params.candidates (the embedded store's factor too)
STATS_CACHED_DOCUMENTS = 1_000_000  # memories whose terms the statistics caches hold, over all tenants
STATS_REREAD_S = 600.0  # a tenant's statistics are read again in full (in the background) this often
SETTLE_S = 2.0  # the catch-up read reaches back this far before the newest terms write it saw
KEYSET_PROPERTIES = ("seq", "terms_seq")  # range-indexed integers that long reads page by
CACHED_MEMORIES = 50_000
_MEMORY_PROPERTIES = ["memory_id", "turn_id", "session_id", "character_id", "user_id", "text", "context",
                      "preceding", "created_at", "record_kind", "scope", "fact"]
ACTIVE = "active"
HIDDEN_STATUSES = ("provisional", "revoked")  # never a search candidate
ARCHIVED = "archived"  # a search candidate only with include_archived
LEGACY_TURNS = "feltsense: every turn, as sent (some stored before turns recorded their tenant)"
_EXPLAINED = re.compile(r"Result Set (keyword|vector),\w+\) Document [0-9a-fA-F-]+: original score ([-+0-9.eE]+)")

P = ParamSpec("P")
R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")
Props = dict[str, Any]
Stored = Object[Props, None]
TermsOp = tuple[str, str | None]  # (memory id, its ``terms`` as now stored, or None: deleted)

log = logging.getLogger("feltsense.weaviate")


# -- boundary ------------------------------------------------------------------------------------------------


def _unavailable(exc: Exception, action: str) -> BackendUnavailable:
    return BackendUnavailable(f"Weaviate is unreachable ({action}): {exc}", backend=BACKEND)


@contextlib.contextmanager
def _translated(action: str) -> Iterator[None]:
    """Weaviate's errors as the engine's: unreachable -> BackendUnavailable, refused -> BackendRejected."""
    try:
        yield
    except FeltsenseError:
        raise
    except (wx.WeaviateConnectionError, wx.WeaviateStartUpError, wx.WeaviateTimeoutError,
            wx.WeaviateGRPCUnavailableError, wx.WeaviateClosedClientError) as exc:
        raise _unavailable(exc, action) from exc
    except wx.UnexpectedStatusCodeError as exc:
        if exc.status_code in (502, 503, 504):
            raise _unavailable(exc, action) from exc
        raise BackendRejected(f"Weaviate refused to {action}: {exc}", backend=BACKEND) from exc
    except wx.WeaviateBaseError as exc:
        if any(marker in str(exc) for marker in ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED",
                                                 "Connection refused", "failed to connect")):
            raise _unavailable(exc, action) from exc
        raise BackendRejected(f"Weaviate refused to {action}: {exc}", backend=BACKEND) from exc
    except OSError as exc:  # sockets, from the HTTP or gRPC transport
        raise _unavailable(exc, action) from exc


def _boundary(
    action: str,
) -> Callable[[Callable[Concatenate[WeaviateStore, P], R]], Callable[Concatenate[WeaviateStore, P], R]]:
    """A public method: errors translated, and fast failure while the server is known to be down."""

    def decorate(method: Callable[Concatenate[WeaviateStore, P], R]) -> Callable[Concatenate[WeaviateStore, P], R]:
        @functools.wraps(method)
        def guarded(store: WeaviateStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
            store._check_reachable(action)
            try:
                with _translated(action):
                    return method(store, *args, **kwargs)
            except BackendUnavailable:
                store._down = True
                raise

        return guarded

    return decorate


def _missing_tenant(exc: wx.WeaviateBaseError) -> bool:
    # A partition nobody has written to has no tenant yet: reading it is an empty answer, not an error.
    return "tenant not found" in str(exc)


def _check_inserted(result: BatchObjectReturn, what: str) -> None:
    if result.has_errors:
        first = next(iter(result.errors.values()))
        raise BackendRejected(
            f"Weaviate refused {len(result.errors)} of the {what} written: {first.message}", backend=BACKEND
        )


# -- naming --------------------------------------------------------------------------------------------------


def _slug(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_") or "x"


def tenant_for(partition: Partition) -> str:
    """A tenant name for a partition: readable, and unique by its digest (names allow 64 of [A-Za-z0-9_-])."""
    digest = hashlib.blake2b(f"{partition.character_id}\x1f{partition.user_id}".encode(), digest_size=10)
    return f"{_slug(partition.character_id)[:16]}-{_slug(partition.user_id)[:16]}-{digest.hexdigest()}"


def _id(kind: str, key: str) -> UUID:
    return UUID(generate_uuid5(key, kind))


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


class _Lru(Generic[K, V]):
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


class _TenantTerms:
    """One tenant's stage-one statistics as this process knows them: each memory's ``terms`` as stored, each
    term's document frequency (memories whose ``terms`` hold it) and the total length, so the number of
    documents and the average length. ``put`` and ``drop`` are idempotent: a write replayed on a copy that
    already holds it changes nothing. Guarded by the store's statistics lock."""

    def __init__(self) -> None:
        self.terms: dict[str, str] = {}
        self.document_frequency: Counter[str] = Counter()
        self.total_length = 0
        self.mark = 0  # every terms write up to this terms_seq is counted (see WeaviateStore._catch_up)
        self.read_at = time.monotonic()  # when the tenant was last read in full
        self.rereading = False  # a background read of the whole tenant is under way

    @property
    def documents(self) -> int:
        return len(self.terms)

    @property
    def average_length(self) -> float:
        return self.total_length / len(self.terms) if self.terms else 0.0

    def apply(self, memory_id: str, text: str | None) -> None:
        if text is None:
            self.drop(memory_id)
        else:
            self.put(memory_id, text)

    def put(self, memory_id: str, text: str) -> None:
        old = self.terms.get(memory_id)
        if old == text:
            return
        if old is not None:
            self._count(old, -1)
        self.terms[memory_id] = text
        self._count(text, 1)

    def drop(self, memory_id: str) -> None:
        old = self.terms.pop(memory_id, None)
        if old is not None:
            self._count(old, -1)

    def _count(self, text: str, sign: int) -> None:
        tokens = text.split()
        self.total_length += sign * len(tokens)
        frequency = self.document_frequency
        for term in set(tokens):
            frequency[term] += sign
            if frequency[term] <= 0:
                del frequency[term]


# -- schema --------------------------------------------------------------------------------------------------


def _key(name: str) -> Property:
    """A whole-value text property that filters can use (ids, states)."""
    return Property(name=name, data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_filterable=True,
                    index_searchable=False)


def _stored(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """A property that is only ever read back, never filtered or searched."""
    return Property(name=name, data_type=data_type, index_filterable=False, index_searchable=False,
                    index_range_filters=False)


def _sequence(name: str = "seq") -> Property:
    """The ingest order: sorted on, and range-filtered for keyset paging past the server's offset window."""
    return Property(name=name, data_type=DataType.INT, index_filterable=True, index_range_filters=True,
                    index_searchable=False)


def _value(name: str, data_type: DataType) -> Property:
    return Property(name=name, data_type=data_type, index_filterable=True, index_range_filters=False)


MEMORY_SCHEMA = [
    _key("memory_id"), _stored("turn_id"), _key("session_id"), _stored("character_id"), _stored("user_id"),
    _stored("text"), _stored("context"),
    # The session's turn before this one: its words are in ``terms`` too (``Memory.preceding``).
    _stored("preceding"),
    # The lower-cased text as one token, for the substring fallback's `like *word*` filters.
    _key("folded"),
    # What BM25 searches: engine.domain.text.terms of the text and of the trace's facts, space-separated; and when
    # it was last written, on seq's clock (what the statistics caches catch up from: see the module docstring).
    Property(name="terms", data_type=DataType.TEXT, tokenization=Tokenization.WHITESPACE, index_filterable=False,
             index_searchable=True),
    _sequence("terms_seq"),
    _value("created_at", DataType.DATE), _sequence(),
    # created_at again as seconds since the epoch: tone candidates read thousands of them per recall, and
    # parsing a date string each is the client's slowest step.
    _stored("created_epoch", DataType.NUMBER),
    _key("trace_status"), _key("kind"), _stored("register"), _value("intensity", DataType.NUMBER),
    _value("valence", DataType.NUMBER), _stored("trace"),
    # The record: "turn" or "fact" (``kind`` above is the trace's emotional/factual kind), its scope, and a
    # fact's slot and provenance as JSON (read back only: never in the BM25 index, which is ``terms`` alone).
    _key("record_kind"), _key("scope"), _stored("fact"),
    # The lifecycle: ``status`` filters search (objects stored before it existed have none and count as
    # active), ``state`` is the whole MemoryState as JSON, present once a state has been written.
    _key("status"), _stored("state"),
]
DIRECTORY_SCHEMA = [_stored("memory_id"), _stored("tenant"), _sequence(),
                    _value("has_vector", DataType.BOOL)]
TURN_SCHEMA = [_stored("turn_id"), _key("session_id"), _stored("character_id"), _stored("user_id"), _stored("role"),
               _stored("text"), _stored("timestamp", DataType.DATE), _sequence(),
               # The partition's tenant name (turns are not multi-tenant): what erasing a partition's turns filters on.
               _key("tenant")]
SESSION_SCHEMA = [_stored("session_id"), _stored("tenant"), _stored("character_id"), _stored("user_id"),
                  _value("closed", DataType.BOOL), _stored("closed_at", DataType.DATE),
                  _value("pending", DataType.BOOL)]


def _memory_properties(memory: Memory, seq: int, state: MemoryState | None = None) -> Props:
    props: Props = {
        "memory_id": memory.memory_id, "turn_id": memory.turn_id, "session_id": memory.session_id,
        "character_id": memory.character_id, "user_id": memory.user_id, "text": memory.text,
        "context": memory.context, "preceding": memory.preceding, "folded": memory.text.lower(),
        "terms": _indexed_terms(memory, ()), "terms_seq": seq,
        "created_at": memory.created_at, "created_epoch": memory.created_at.timestamp(), "seq": seq,
        "record_kind": memory.kind, "scope": memory.scope, "status": ACTIVE,
    }
    if memory.fact is not None:
        props["fact"] = memory.fact.model_dump_json()
    if state is not None:
        props.update(_state_properties(state))
    return props


def _state_properties(state: MemoryState) -> Props:
    return {"status": state.status, "state": state.model_dump_json()}


def _indexed_terms(memory: Memory, facts: Sequence[str]) -> str:
    """``terms``: the index terms of the memory's text, of the turn before it and of each distinct fact sentence
    of its trace, as the embedded store indexes them."""
    indexed = terms(memory.text) + terms(memory.preceding)
    indexed += [term for fact in dict.fromkeys(facts) for term in terms(fact)]
    return " ".join(indexed)


def _trace_properties(trace: Trace, memory: Memory, terms_seq: int) -> Props:
    return {
        "trace_status": trace.status.value, "kind": trace.kind.value, "register": trace.register,
        "intensity": trace.intensity, "valence": trace.valence, "trace": trace.model_dump_json(),
        "terms": _indexed_terms(memory, trace.facts), "terms_seq": terms_seq,
    }


def _memory_from(props: Mapping[str, Any]) -> Memory:
    fact = props.get("fact")
    return Memory(
        memory_id=props["memory_id"], turn_id=props.get("turn_id") or "", session_id=props["session_id"],
        character_id=props["character_id"], user_id=props["user_id"], text=props["text"],
        context=props.get("context") or "", preceding=props.get("preceding") or "",
        created_at=_as_datetime(props["created_at"]),
        # Objects stored before these properties existed are user turns.
        kind=props.get("record_kind") or "turn", scope=props.get("scope") or "user",
        fact=FactInfo.model_validate_json(fact) if fact else None,
    )


def _turn_from(props: Mapping[str, Any]) -> Turn:
    return Turn(
        turn_id=props["turn_id"], session_id=props["session_id"], character_id=props["character_id"],
        user_id=props["user_id"], role=props["role"], text=props["text"],
        timestamp=_as_datetime(props["timestamp"]),
    )


def _chunks(items: Sequence[V], size: int) -> Iterator[Sequence[V]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


TONE_CACHE_S = 10.0
"""How long tone candidates read by recall are reused before asking the server again (see ``_tone_cache``)."""


class WeaviateStore:
    """The MemoryStore port over a Weaviate server. Thread-safe; writes are serialised within the process."""

    def __init__(
        self,
        url: str,
        *,
        grpc_port: int,
        api_key: str | None = None,
        embedding_model: str,
        dimension: int,
        collection_prefix: str = "Feltsense",
        timeout_s: float = 30.0,
    ) -> None:
        if not PREFIX_PATTERN.fullmatch(collection_prefix):
            raise ConfigurationError(
                f"collection prefix {collection_prefix!r} must be a capital letter then letters and digits"
            )
        if dimension < 1:
            raise ConfigurationError(f"dimension must be positive, not {dimension}")
        self._model = embedding_model
        self._dimension = dimension
        self._ready_url = f"{url.rstrip('/')}/v1/.well-known/ready"
        self._probe_timeout_s = min(timeout_s, 2.0)
        self._down = False
        self._client = self._connect(url, grpc_port=grpc_port, api_key=api_key, timeout_s=timeout_s)
        suffix = f"{_slug(embedding_model)}_{dimension}"
        try:
            with _translated("open its collections"):
                self._memories = self._collection(
                    f"{collection_prefix}Memory_{suffix}", MEMORY_SCHEMA, multi_tenant=True,
                    description=json.dumps({"feltsense": "memories", "embedding_model": embedding_model,
                                            "dimension": dimension}),
                )
                self._check_memory_collection()
                self._directory = self._collection(
                    f"{collection_prefix}MemoryDirectory_{suffix}", DIRECTORY_SCHEMA, multi_tenant=False,
                    description="feltsense: where each memory lives (tenant, ingest order, vector or not)",
                )
                self._turns = self._collection(f"{collection_prefix}Turn", TURN_SCHEMA, multi_tenant=False,
                                               description="feltsense: every turn, as sent",
                                               before_migrating=self._mark_legacy_turns)
                # Turns stored before they recorded their tenant are found through their sessions' owners.
                self._legacy_turns = self._turns.config.get().description == LEGACY_TURNS
                self._sessions = self._collection(
                    f"{collection_prefix}Session", SESSION_SCHEMA, multi_tenant=False,
                    description="feltsense: each session's owner, closed time and pending-trace flag",
                )
        except BaseException:
            self._client.close()
            raise
        self._write_lock = threading.RLock()
        self._seq_lock = threading.Lock()
        self._last_seq = 0
        self._cached_memories: _Lru[str, Memory] = _Lru(CACHED_MEMORIES)
        # tenant -> (min_intensity, max_valence) -> (expires at, candidates). Recall reads tone candidates every
        # turn; this process's own trace writes and deletions drop a tenant's entries at once, and other
        # processes' writes show within TONE_CACHE_S.
        self._tone_cache: dict[str, dict[tuple[float, float], tuple[float, ToneCandidates]]] = {}
        self._tenants: _Lru[str, str] = _Lru(4 * CACHED_MEMORIES)  # memory id -> tenant (never changes)
        self._session_tenants: _Lru[str, str] = _Lru(CACHED_MEMORIES)  # owned session id -> tenant
        # Stage one's statistics per tenant (see the module docstring), least recently searched first, and the
        # journals of the reads under way: each records this process's terms writes to the tenant made during
        # its read, to replay on what it read.
        self._stats: OrderedDict[str, _TenantTerms] = OrderedDict()
        self._journals: dict[str, list[list[TermsOp]]] = defaultdict(list)
        self._first_reads: dict[str, threading.Lock] = {}
        self._stats_lock = threading.Lock()
        self._closed = False

    # -- setup --------------------------------------------------------------------------------------------

    @staticmethod
    def _connect(url: str, *, grpc_port: int, api_key: str | None, timeout_s: float) -> weaviate.WeaviateClient:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"Weaviate URL {url!r} must look like http://host:port")
        secure = parts.scheme == "https"
        with _translated(f"connect to {url}"):
            try:
                return weaviate.connect_to_custom(
                    http_host=parts.hostname, http_port=parts.port or (443 if secure else 80), http_secure=secure,
                    grpc_host=parts.hostname, grpc_port=grpc_port, grpc_secure=secure,
                    auth_credentials=None if api_key is None else Auth.api_key(api_key),
                    additional_config=AdditionalConfig(
                        timeout=Timeout(init=min(timeout_s, 30.0), query=timeout_s, insert=timeout_s)
                    ),
                )
            except ValueError as exc:  # the client validates its connection parameters (pydantic)
                raise ConfigurationError(f"cannot connect to Weaviate at {url} (gRPC port {grpc_port}): {exc}") from exc

    def _collection(
        self, name: str, schema: list[Property], *, multi_tenant: bool, description: str,
        before_migrating: Callable[[Collection[Props, None], list[str]], None] | None = None,
    ) -> Collection[Props, None]:
        if not self._client.collections.exists(name):
            try:
                self._client.collections.create(
                    name,
                    description=description,
                    properties=schema,
                    # Explicit even where nothing is stored: a server's default vectorizer must never run.
                    vector_config=Configure.Vectors.self_provided(
                        vector_index_config=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE)
                    ),
                    multi_tenancy_config=Configure.multi_tenancy(
                        enabled=multi_tenant, auto_tenant_creation=multi_tenant,
                        auto_tenant_activation=multi_tenant,
                    ),
                    inverted_index_config=Configure.inverted_index(
                        bm25_k1=RetrievalParams().bm25_k1, bm25_b=RetrievalParams().bm25_b,
                        stopwords_preset=StopwordsPreset.NONE,
                    ),
                )
            except wx.UnexpectedStatusCodeError:
                if not self._client.collections.exists(name):  # else another process created it meanwhile
                    raise
        collection: Collection[Props, None] = self._client.collections.use(name)
        config = collection.config.get()
        if config.multi_tenancy_config.enabled != multi_tenant:
            raise ConfigurationError(
                f"the Weaviate collection {name} exists with multi-tenancy "
                f"{'on' if config.multi_tenancy_config.enabled else 'off'}; this store needs it "
                f"{'on' if multi_tenant else 'off'}. Use another collection prefix."
            )
        self._add_missing_properties(collection, schema, {p.name for p in config.properties}, before_migrating)
        return collection

    @staticmethod
    def _add_missing_properties(
        collection: Collection[Props, None], schema: list[Property], existing: set[str],
        before_migrating: Callable[[Collection[Props, None], list[str]], None] | None,
    ) -> None:
        """Add the properties a collection made by an earlier release lacks, with their own index settings
        (left to Weaviate's auto-schema, a text property would be tokenised into words and made searchable).
        Objects stored before keep no value for them; the readers treat that as the old default."""
        missing = [prop for prop in schema if prop.name not in existing]
        if not missing:
            return
        if before_migrating is not None:
            before_migrating(collection, [prop.name for prop in missing])
        for prop in missing:
            try:
                collection.config.add_property(prop)
            except (wx.WeaviateInvalidInputError, wx.UnexpectedStatusCodeError):
                # Another process added it meanwhile; anything else is still an error.
                if not any(p.name == prop.name for p in collection.config.get().properties):
                    raise

    @staticmethod
    def _mark_legacy_turns(turns: Collection[Props, None], missing: list[str]) -> None:
        # Recorded before the property is added, so that a crash in between cannot hide the old turns.
        if "tenant" in missing:
            turns.config.update(description=LEGACY_TURNS)

    def _check_memory_collection(self) -> None:
        # Vectors of two embedding models never mix: the collection is bound to the model that created it.
        config = self._memories.config.get()
        try:
            found = json.loads(config.description or "")
            model, dimension = found["embedding_model"], found["dimension"]
        except (ValueError, KeyError, TypeError):
            raise ConfigurationError(
                f"the Weaviate collection {config.name} was not made by feltsense (its description does not "
                "name an embedding model); use another collection prefix"
            ) from None
        if model != self._model or dimension != self._dimension:
            raise ConfigurationError(
                f"the Weaviate collection {config.name} holds vectors of {model} ({dimension}-d); this engine "
                f"embeds with {self._model} ({self._dimension}-d). Use another collection prefix or re-embed."
            )
        vectors = list(config.vector_config.values()) if config.vector_config else []
        if len(vectors) != 1 or vectors[0].vectorizer.vectorizer != Vectorizers.NONE or (
            getattr(vectors[0].vector_index_config, "distance_metric", None) != VectorDistances.COSINE
        ):
            raise ConfigurationError(
                f"the Weaviate collection {config.name} must have one self-provided vector with cosine distance"
            )

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

    @staticmethod
    def _by_ids(
        collection: Collection[Props, None], ids: Iterable[UUID], properties: list[str], *,
        include_vector: bool = False,
    ) -> list[Stored]:
        """Objects by id (the ones that exist), a page at a time. An absent tenant holds nothing."""
        unique = list(dict.fromkeys(ids))
        found: list[Stored] = []
        try:
            for chunk in _chunks(unique, PAGE):
                found.extend(collection.query.fetch_objects(
                    filters=Filter.by_id().contains_any(list(chunk)), limit=len(chunk),
                    return_properties=properties, include_vector=include_vector,
                ).objects)
        except wx.WeaviateQueryError as exc:
            if _missing_tenant(exc):
                return []
            raise
        return found

    @staticmethod
    def _all(
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
            if _missing_tenant(exc):
                return []
            raise
        return found

    def _remember(self, memory: Memory) -> None:
        self._cached_memories.put(memory.memory_id, memory)
        self._tenants.put(memory.memory_id, tenant_for(memory.partition))

    def _locate(self, memory_ids: Iterable[str]) -> dict[str, str]:
        """Memory id -> tenant, for the ids that exist: the cache first, then the directory."""
        located: dict[str, str] = {}
        unknown: list[str] = []
        for memory_id in dict.fromkeys(memory_ids):
            tenant = self._tenants.get(memory_id)
            if tenant is None:
                unknown.append(memory_id)
            else:
                located[memory_id] = tenant
        if unknown:
            for entry in self._by_ids(self._directory, (_id("memory", m) for m in unknown),
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
            by_tenant[tenant].append(_id("memory", memory_id))
        found: dict[str, Stored] = {}
        for tenant, ids in by_tenant.items():
            for obj in self._by_ids(self._in(tenant), ids, [*properties, "memory_id"],
                                    include_vector=include_vector):
                found[obj.properties["memory_id"]] = obj
        return found

    def _session_tenant(self, session_id: str) -> str | None:
        tenant = self._session_tenants.get(session_id)
        if tenant is None:
            record = self._by_ids(self._sessions, [_id("session", session_id)], ["tenant"])
            if record and record[0].properties.get("tenant"):
                tenant = str(record[0].properties["tenant"])
                self._session_tenants.put(session_id, tenant)
        return tenant

    # -- writes -------------------------------------------------------------------------------------------

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
        records = {r.properties["session_id"]: r for r in self._by_ids(
            self._sessions, (_id("session", s) for s in unknown), ["session_id", "tenant"])}
        fresh = []
        for session_id, (tenant, partition) in unknown.items():
            record = records.get(session_id)
            owner = {"tenant": tenant, "character_id": partition.character_id, "user_id": partition.user_id}
            if record is None:
                fresh.append(DataObject(properties={"session_id": session_id, **owner, "closed": False,
                                                    "pending": False}, uuid=_id("session", session_id)))
            elif not record.properties.get("tenant"):  # closed before any turn arrived: claim it now
                self._sessions.data.update(uuid=_id("session", session_id), properties=owner)
            elif record.properties["tenant"] != tenant:
                raise InvalidInput(f"session {session_id!r} already belongs to another character or user",
                                   field="session_id")
        if fresh:
            _check_inserted(self._sessions.data.insert_many(fresh), "sessions")
        for session_id, (tenant, _) in unknown.items():
            self._session_tenants.put(session_id, tenant)

    def _update_session(self, session_id: str, properties: Props) -> None:
        uuid = _id("session", session_id)
        try:
            self._sessions.data.update(uuid=uuid, properties=properties)
        except wx.UnexpectedStatusCodeError as exc:
            if exc.status_code != 404:
                raise
            # A session closed before any of its turns arrived: recorded without an owner until they do.
            record = {"session_id": session_id, "tenant": "", "character_id": "", "user_id": "", "closed": False,
                      "pending": False}
            _check_inserted(self._sessions.data.insert_many([DataObject(properties={**record, **properties},
                                                                        uuid=uuid)]), "sessions")

    def _refresh_pending(self, sessions: Mapping[str, str], pending: set[str]) -> None:
        """Keep each session's pending flag true exactly while one of its traces is pending."""
        for session_id, tenant in sessions.items():
            still = session_id in pending or bool(self._all(
                self._in(tenant),
                Filter.all_of([Filter.by_property("session_id").equal(session_id),
                               Filter.by_property("trace_status").equal(TraceStatus.PENDING.value)]),
                ["memory_id"], sort=None, limit=1,
            ))
            self._update_session(session_id, {"pending": still})

    @_boundary("store turns")
    def add_turns(self, turns: Sequence[Turn]) -> list[bool]:
        if not turns:
            return []
        with self._write_lock:
            stored = {obj.uuid for obj in self._by_ids(self._turns, (_id("turn", t.turn_id) for t in turns),
                                                       ["turn_id"])}
            new: list[bool] = []
            fresh: list[Turn] = []
            for turn in turns:
                uuid = _id("turn", turn.turn_id)
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
                    }, uuid=_id("turn", t.turn_id))
                    for t, seq in zip(fresh, self._next_seqs(len(fresh)), strict=True)
                ]
                _check_inserted(self._turns.data.insert_many(objects), "turns")
        return new

    def _check_vectors(self, count: int, vectors: NDArray[np.float32], field: str) -> None:
        if len(vectors) != count:
            raise InvalidInput(f"{count} {field} but {len(vectors)} vectors", field="vectors")
        if count and (vectors.ndim != 2 or vectors.shape[1] != self._dimension):
            raise InvalidInput(f"vectors are {vectors.shape[-1]}-d, the store holds {self._dimension}-d",
                               field="vectors")

    @_boundary("store memories")
    def add_memories(self, memories: Sequence[Memory], vectors: NDArray[np.float32] | None) -> None:
        if vectors is not None:
            self._check_vectors(len(memories), vectors, "memories")
        if not memories:
            return
        with self._write_lock:
            stored = {obj.uuid for obj in self._by_ids(
                self._directory, (_id("memory", m.memory_id) for m in memories), ["memory_id"])}
            fresh: list[int] = []
            for i, memory in enumerate(memories):
                uuid = _id("memory", memory.memory_id)
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
                properties=_memory_properties(memory, seq, state), uuid=_id("memory", memory.memory_id),
                vector=None if vector is None else np.asarray(vector, dtype=np.float32).tolist(),
            ))
        for tenant, objects in by_tenant.items():
            _check_inserted(self._in(tenant).data.insert_many(objects), "memories")
        # The directory entry last: it is what says a memory is stored, so a write that fails halfway is
        # redone in full when the memory is sent again.
        _check_inserted(self._directory.data.insert_many([
            DataObject(properties={
                "memory_id": memory.memory_id, "tenant": tenant_for(memory.partition), "seq": seq,
                "has_vector": vector is not None,
            }, uuid=_id("memory", memory.memory_id))
            for (memory, vector, _), seq in zip(entries, seqs, strict=True)
        ]), "memories (directory)")
        for memory, _, _ in entries:
            self._remember(memory)
        for tenant in by_tenant:
            self._note_terms(tenant, [(memory.memory_id, _indexed_terms(memory, ())) for memory, _, _ in entries
                                      if tenant_for(memory.partition) == tenant])

    @_boundary("store vectors")
    def set_vectors(self, memory_ids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        self._check_vectors(len(memory_ids), vectors, "ids")
        with self._write_lock:
            located = self._locate(memory_ids)
            for memory_id, vector in zip(memory_ids, vectors, strict=True):
                tenant = located.get(memory_id)
                if tenant is None:
                    continue  # as in the embedded store: an id that is not stored is ignored
                uuid = _id("memory", memory_id)
                try:
                    self._in(tenant).data.update(uuid=uuid, vector=np.asarray(vector, dtype=np.float32).tolist())
                    self._directory.data.update(uuid=uuid, properties={"has_vector": True})
                except wx.UnexpectedStatusCodeError as exc:
                    if exc.status_code != 404:  # 404: deleted since it was located
                        raise

    @_boundary("store traces")
    def put_traces(self, traces: Sequence[Trace]) -> None:
        if not traces:
            return
        with self._write_lock:
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
                properties = _trace_properties(trace, memory, terms_seq)
                self._in(tenant).data.update(uuid=_id("memory", memory.memory_id), properties=properties)
                self._note_terms(tenant, [(memory.memory_id, properties["terms"])])
                sessions[memory.session_id] = tenant
                self._tone_cache.pop(tenant, None)
                if trace.status is TraceStatus.PENDING:
                    pending.add(memory.session_id)
            self._refresh_pending(sessions, pending)

    @_boundary("mark a session closed")
    def mark_session_closed(self, session_id: str, closed_at: datetime) -> None:
        with self._write_lock:
            self._update_session(session_id, {"closed": True, "closed_at": closed_at})

    @_boundary("delete memories")
    def delete_memories(self, memory_ids: Sequence[str]) -> None:
        """Forget memories and their traces (their turns stay). Ids that are not stored are ignored."""
        with self._write_lock:
            memories = self.get_memories(memory_ids)
            by_tenant: dict[str, list[UUID]] = defaultdict(list)
            sessions: dict[str, str] = {}
            for memory in memories:
                by_tenant[tenant_for(memory.partition)].append(_id("memory", memory.memory_id))
                sessions[memory.session_id] = tenant_for(memory.partition)
            for tenant, ids in by_tenant.items():
                self._tone_cache.pop(tenant, None)
                for chunk in _chunks(ids, PAGE):
                    _check_deleted(self._in(tenant).data.delete_many(
                        where=Filter.by_id().contains_any(list(chunk))))
            for memory in memories:
                self._note_terms(tenant_for(memory.partition), [(memory.memory_id, None)])
            self._forget_preceding(memories)
            ids = [_id("memory", m.memory_id) for m in memories]
            for chunk in _chunks(ids, PAGE):
                _check_deleted(self._directory.data.delete_many(where=Filter.by_id().contains_any(list(chunk))))
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
            after = [obj for obj in self._all(self._in(tenant), Filter.by_property("session_id").equal(session_id),
                                              [*_MEMORY_PROPERTIES, "trace"])
                     if obj.properties.get("preceding") and obj.properties["preceding"] in texts]
            for obj, terms_seq in zip(after, self._next_seqs(len(after)), strict=True):
                memory = _memory_from(obj.properties).model_copy(update={"preceding": ""})
                facts = Trace.model_validate_json(obj.properties["trace"]).facts if obj.properties.get("trace") else ()
                indexed = _indexed_terms(memory, facts)
                self._in(tenant).data.update(uuid=obj.uuid, properties={"preceding": "", "terms": indexed,
                                                                        "terms_seq": terms_seq})
                self._note_terms(tenant, [(memory.memory_id, indexed)])
                self._remember(memory)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @_boundary("store states")
    def put_states(self, states: Sequence[MemoryState]) -> None:
        if not states:
            return
        with self._write_lock:
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
            self._tone_cache.pop(tenant, None)
            try:
                self._in(tenant).data.update(uuid=_id("memory", memory_id), properties=_state_properties(state))
            except wx.UnexpectedStatusCodeError as exc:
                if exc.status_code != 404:
                    raise
                self._cached_memories.drop(memory_id)  # deleted by another process since it was cached
                self._tenants.drop(memory_id)
                raise NotFound(f"no memory {memory_id!r} to set the state of") from exc

    @_boundary("store a fact")
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
        with self._write_lock:
            others = list(dict.fromkeys(s.memory_id for s in replaced if s.memory_id != fact.memory_id))
            found = {m.memory_id for m in self.get_memories(others)}
            missing = [memory_id for memory_id in others if memory_id not in found]
            if missing:
                raise NotFound(f"no memory {missing[0]!r} to set the state of")
            if fact.memory_id in self._locate([fact.memory_id]):
                self._put_states([state])  # sent again: the stored content stays, the state is the new one
            else:
                self._insert([(fact, vector, state)])
                self._tone_cache.pop(tenant_for(fact.partition), None)
            self._before_replacing(fact)
            self._put_states(replaced)

    def _before_replacing(self, fact: Memory) -> None:
        """A seam for crash-injection tests: runs between writing a new fact and revoking what it replaces."""

    @_boundary("delete turns")
    def delete_turns(self, partition: Partition, turn_ids: Sequence[str] | None = None) -> list[str]:
        tenant = tenant_for(partition)
        with self._write_lock:
            if turn_ids is not None:
                found = [t for t in self._by_ids(self._turns, (_id("turn", i) for i in turn_ids),
                                                 [p.name for p in TURN_SCHEMA])
                         if (t.properties["character_id"], t.properties["user_id"])
                         == (partition.character_id, partition.user_id)]
                for chunk in _chunks([t.uuid for t in found], PAGE):
                    _check_deleted(self._turns.data.delete_many(where=Filter.by_id().contains_any(list(chunk))))
                return [str(t.properties["turn_id"]) for t in found]
            wheres = [Filter.by_property("tenant").equal(tenant)]
            if self._legacy_turns:
                # Turns stored before they recorded their tenant: through the sessions the partition owns (a
                # session belongs to the partition of its first turn for good). A scan, but erasure is rare.
                owned = [obj.properties["session_id"]
                         for obj in self._sessions.iterator(return_properties=["session_id", "tenant"])
                         if obj.properties.get("tenant") == tenant]
                wheres += [Filter.by_property("session_id").contains_any(list(chunk))
                           for chunk in _chunks(owned, PAGE)]
            deleted: list[str] = []
            for where in wheres:
                ids = [str(t.properties["turn_id"]) for t in self._all(self._turns, where, ["turn_id"])]
                self._delete_all(self._turns, where)
                deleted.extend(ids)
        return list(dict.fromkeys(deleted))

    @_boundary("read turns")
    def find_turns(self, turn_ids: Sequence[str]) -> dict[str, Turn]:
        found = self._by_ids(self._turns, (_id("turn", i) for i in turn_ids), [p.name for p in TURN_SCHEMA])
        return {str(t.properties["turn_id"]): _turn_from(t.properties) for t in found}

    def purge(self) -> None:
        """Nothing to do from here: deleted objects leave Weaviate's API at once, and its segments compact on
        their own schedule (the server's files are its operator's to manage)."""

    @staticmethod
    def _delete_all(collection: Collection[Props, None], where: FilterReturn) -> int:
        """Delete every match (one request deletes at most QUERY_MAXIMUM_RESULTS); how many were deleted."""
        deleted = 0
        while True:
            result = collection.data.delete_many(where=where)
            _check_deleted(result)
            deleted += result.successful
            if not result.successful:
                return deleted

    # -- reads --------------------------------------------------------------------------------------------

    @_boundary("read turns")
    def get_turns(self, session_id: str) -> list[Turn]:
        found = self._all(self._turns, Filter.by_property("session_id").equal(session_id),
                          [p.name for p in TURN_SCHEMA])
        return [_turn_from(obj.properties) for obj in found]

    @_boundary("read a session's memories")
    def session_memories(self, session_id: str) -> list[Memory]:
        tenant = self._session_tenant(session_id)
        if tenant is None:
            return []
        # A session's turns, not the facts distilled from it (``!=``: objects stored before ``record_kind``
        # existed have none, and are turns).
        found = self._all(self._in(tenant), Filter.all_of([
            Filter.by_property("session_id").equal(session_id),
            Filter.by_property("record_kind").not_equal("fact"),
        ]), _MEMORY_PROPERTIES)
        memories = [_memory_from(obj.properties) for obj in found]
        for memory in memories:
            self._remember(memory)
        return memories

    @_boundary("list memories")
    def list_memories(self, partition: Partition, *, offset: int, limit: int) -> list[Memory]:
        tenant = tenant_for(partition)
        try:
            found = self._in(tenant).query.fetch_objects(
                limit=limit, offset=offset, return_properties=_MEMORY_PROPERTIES,
                sort=Sort.by_property("seq", ascending=True),
            ).objects
        except wx.WeaviateQueryError as exc:
            if _missing_tenant(exc):
                return []
            raise
        return [_memory_from(obj.properties) for obj in found]

    @_boundary("read memories")
    def get_memories(self, memory_ids: Sequence[str]) -> list[Memory]:
        found: dict[str, Memory] = {}
        missing = []
        for memory_id in memory_ids:
            cached = self._cached_memories.get(memory_id)
            if cached is None:
                missing.append(memory_id)
            else:
                found[memory_id] = cached
        if missing:
            for memory_id, obj in self._objects(missing, _MEMORY_PROPERTIES).items():
                found[memory_id] = _memory_from(obj.properties)
                self._remember(found[memory_id])
        return [found[m] for m in memory_ids if m in found]

    @_boundary("read vectors")
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

    @_boundary("read traces")
    def get_traces(self, memory_ids: Sequence[str]) -> dict[str, Trace]:
        if not memory_ids:
            return {}
        found = self._objects(memory_ids, ["trace"])
        return {memory_id: Trace.model_validate_json(obj.properties["trace"])
                for memory_id, obj in found.items() if obj.properties.get("trace")}

    @_boundary("read unembedded memories")
    def unembedded(self, limit: int) -> list[Memory]:
        entries = self._all(self._directory, Filter.by_property("has_vector").equal(False),
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
                        self._directory.data.delete_by_id(_id("memory", memory_id))
                        self._tenants.drop(memory_id)
        return memories

    @_boundary("read states")
    def get_states(self, memory_ids: Sequence[str]) -> dict[str, MemoryState]:
        if not memory_ids:
            return {}
        found = self._objects(memory_ids, ["state"])
        return {memory_id: MemoryState.model_validate_json(obj.properties["state"])
                for memory_id, obj in found.items() if obj.properties.get("state")}

    @_boundary("list facts")
    def list_facts(self, partition: Partition) -> list[Memory]:
        found = self._all(self._in(tenant_for(partition)), Filter.by_property("record_kind").equal("fact"),
                          _MEMORY_PROPERTIES)
        facts = [_memory_from(obj.properties) for obj in found]
        for fact in facts:
            self._remember(fact)
        return facts

    @_boundary("read tone candidates")
    def tone_candidates(
        self, partition: Partition, *, min_intensity: float, max_valence: float
    ) -> ToneCandidates:
        tenant = tenant_for(partition)
        cached = self._tone_cache.get(tenant, {}).get((min_intensity, max_valence))
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        found = self._all(self._in(tenant), Filter.all_of([
            Filter.by_property("trace_status").equal(TraceStatus.COMPLETE.value),
            Filter.by_property("kind").equal(MemoryKind.EMOTIONAL.value),
            Filter.by_property("intensity").greater_or_equal(min_intensity),
            Filter.by_property("valence").less_or_equal(max_valence),
        ]), ["memory_id", "session_id", "register", "intensity", "valence", "created_epoch"])
        episodes: dict[tuple[str, str], int] = {}  # (session, register) -> episode number
        memory_ids, session_ids, episode, intensity, valence, created = [], [], [], [], [], []
        for obj in found:
            props = obj.properties
            memory_ids.append(props["memory_id"])
            self._tenants.put(props["memory_id"], tenant)
            session_ids.append(props["session_id"])
            episode.append(episodes.setdefault((props["session_id"], props["register"]), len(episodes)))
            intensity.append(float(props["intensity"]))
            valence.append(float(props["valence"]))
            created.append(float(props["created_epoch"]))
        candidates = ToneCandidates(
            memory_ids=memory_ids,
            episode=np.asarray(episode, dtype=np.int64),
            session_ids=session_ids,
            intensity=np.asarray(intensity, dtype=np.float64),
            valence=np.asarray(valence, dtype=np.float64),
            created_epoch=np.asarray(created, dtype=np.float64),
        )
        self._tone_cache.setdefault(tenant, {})[(min_intensity, max_valence)] = (
            time.monotonic() + TONE_CACHE_S, candidates
        )
        return candidates

    @_boundary("read pending sessions")
    def pending_sessions(self) -> list[str]:
        found = self._all(self._sessions, Filter.all_of([Filter.by_property("closed").equal(True),
                                                         Filter.by_property("pending").equal(True)]),
                          ["session_id"], sort=None)
        return sorted(obj.properties["session_id"] for obj in found)

    @_boundary("read closed sessions")
    def closed_sessions(self, session_ids: Sequence[str]) -> set[str]:
        found = self._by_ids(self._sessions, (_id("session", s) for s in session_ids), ["session_id", "closed"])
        return {obj.properties["session_id"] for obj in found if obj.properties.get("closed")}

    @_boundary("count memories")
    def count(self, partition: Partition) -> int:
        return self._count_in(tenant_for(partition))

    def _count_in(self, tenant: str) -> int:
        try:
            total = self._in(tenant).aggregate.over_all(total_count=True).total_count
        except wx.WeaviateQueryError as exc:
            if _missing_tenant(exc):
                return 0
            raise
        return int(total or 0)

    # -- stage one ----------------------------------------------------------------------------------------

    @staticmethod
    def _visible(exclude_session: str | None, created_before: datetime, include_archived: bool) -> list[FilterReturn]:
        """What recall may see: active memories (and archived ones with ``include_archived``), not from the
        caller's current session, not from after the turn's time.

        Status is filtered by what is excluded (``!=``), not by ``== "active"``: an object stored before the
        ``status`` property existed has no value for it and is active.
        """
        hidden = [*HIDDEN_STATUSES, *(() if include_archived else (ARCHIVED,))]
        visible = [Filter.by_property("created_at").less_or_equal(created_before),
                   *(Filter.by_property("status").not_equal(status) for status in hidden)]
        if exclude_session is not None:
            visible.append(Filter.by_property("session_id").not_equal(exclude_session))
        return visible

    @_boundary("search")
    def search(
        self,
        partition: Partition,
        *,
        query_vector: NDArray[np.float32] | None,
        query_terms: Sequence[str],
        params: RetrievalParams,
        exclude_session: str | None,
        created_before: datetime,
        include_archived: bool = False,
        term_weights: Sequence[float] | None = None,  # unused: Weaviate's own hybrid query chooses the pool
    ) -> LegScores:
        tenant = tenant_for(partition)
        columns = list(query_terms)
        total = self._count_in(tenant)
        if total == 0:  # an empty level (most canon and shared ones): nothing more to ask
            return LegScores.empty(len(columns))
        excluded = self._excluded(tenant, exclude_session, created_before, include_archived)
        if query_vector is None and not columns:
            return LegScores.empty(len(columns), excluded)
        stats = self._term_stats(tenant, total)
        results: list[Stored] = []

        def pool() -> list[TermsOp]:
            try:
                results.extend(self._in(tenant).query.hybrid(
                    query=" ".join(dict.fromkeys(columns)),
                    vector=None if query_vector is None else np.asarray(query_vector, dtype=np.float32).tolist(),
                    # Strictly between 0 and 1 whenever there is a vector: at 0 or 1 Weaviate skips a leg, and
                    # both legs' results belong in the pool whatever the profile's weights.
                    alpha=min(max(params.vector_weight, 0.01), 0.99) if query_vector is not None else 0.0,
                    fusion_type=HybridFusion.RELATIVE_SCORE,
                    query_properties=["terms"],
                    filters=Filter.all_of(self._visible(exclude_session, created_before, include_archived)),
                    limit=params.candidates * POOL_FACTOR,
                    return_properties=[*_MEMORY_PROPERTIES, "terms", "seq"],
                    return_metadata=MetadataQuery(explain_score=True),
                ).objects)
            except wx.WeaviateQueryError as exc:
                if not _missing_tenant(exc):
                    raise
            # What came back is the newest word on these memories' terms: their statistics follow it.
            return [(obj.properties["memory_id"], obj.properties.get("terms") or "") for obj in results]

        self._read_terms(tenant, pool, stats)
        results.sort(key=lambda obj: int(obj.properties.get("seq") or 0))  # ingest order breaks ranking ties
        where: dict[str, list[int]] = defaultdict(list)
        for column, term in enumerate(columns):
            where[term].append(column)
        n = len(results)
        cosine = np.full(n, np.nan)
        term_frequency = np.zeros((n, len(columns)))
        doc_length = np.zeros(n)
        for row, obj in enumerate(results):
            explained = _EXPLAINED.findall(obj.metadata.explain_score or "")
            if not explained:
                raise BackendRejected(
                    f"cannot read Weaviate's hybrid explanation {obj.metadata.explain_score!r} (is the server a "
                    "version this adapter was tested with?)", backend=BACKEND,
                )
            for leg, score in explained:
                if leg == "vector":
                    cosine[row] = float(score)
            tokens = (obj.properties.get("terms") or "").split()
            doc_length[row] = len(tokens)
            for term, count in Counter(tokens).items():
                for column in where.get(term, ()):
                    term_frequency[row, column] = count
            self._remember(_memory_from(obj.properties))  # recall asks for its candidates next
        with self._stats_lock:
            document_frequency = np.array([float(stats.document_frequency.get(term, 0)) for term in columns])
            documents, average_doc_length = stats.documents, stats.average_length
        return LegScores(
            memory_ids=[obj.properties["memory_id"] for obj in results],
            cosine=cosine,
            term_frequency=term_frequency,
            doc_length=doc_length,
            document_frequency=document_frequency,
            documents=documents,
            average_doc_length=average_doc_length,
            excluded_current_session=excluded,
        )

    def _excluded(
        self, tenant: str, exclude_session: str | None, created_before: datetime, include_archived: bool
    ) -> int:
        """How many memories of the caller's current session recall would otherwise see (same rules as
        ``_visible``): read from that session's memories alone, which the ``session_id`` index finds at once."""
        if exclude_session is None:
            return 0
        hidden = {*HIDDEN_STATUSES, *(() if include_archived else (ARCHIVED,))}
        found = self._all(self._in(tenant), Filter.by_property("session_id").equal(exclude_session),
                          ["status", "created_at"])
        return sum(1 for obj in found if obj.properties.get("status") not in hidden
                   and _as_datetime(obj.properties["created_at"]) <= created_before)

    # -- stage one: the statistics caches (see the module docstring) --------------------------------------

    def _term_stats(self, tenant: str, total: int) -> _TenantTerms:
        """The tenant's statistics, brought up to date given its object count: read in full the first time;
        after that one catch-up read, and a full read in the background when the count still differs or one is
        due."""
        with self._stats_lock:
            stats = self._stats.get(tenant)
            if stats is not None:
                self._stats.move_to_end(tenant)
            first = self._first_reads.setdefault(tenant, threading.Lock()) if stats is None else None
        if stats is None:
            assert first is not None
            with first:  # one first read per tenant: concurrent searches of it wait for that one
                with self._stats_lock:
                    stats = self._stats.get(tenant)
                if stats is None:
                    stats = self._read_tenant(tenant, empty=total == 0)
                with self._stats_lock:
                    self._first_reads.pop(tenant, None)
            return stats
        self._catch_up(tenant, stats)
        with self._stats_lock:
            due = stats.documents != total or time.monotonic() - stats.read_at > STATS_REREAD_S
            start = due and not stats.rereading and not self._closed
            if start:
                stats.rereading = True
        if start:
            threading.Thread(target=self._reread, args=(tenant, stats), name="feltsense-weaviate-terms",
                             daemon=True).start()
        return stats

    def _read_terms(
        self, tenant: str, read: Callable[[], list[TermsOp]], target: _TenantTerms, *, install: bool = False
    ) -> None:
        """Run a read of terms from the server and apply what it found to ``target``, then this process's own
        terms writes to the tenant made while it ran (they are at least as new as what it saw)."""
        journal: list[TermsOp] = []
        with self._stats_lock:
            self._journals[tenant].append(journal)
        try:
            found = read()
        except BaseException:
            with self._stats_lock:
                self._close_journal(tenant, journal)
            raise
        with self._stats_lock:
            self._close_journal(tenant, journal)
            for memory_id, text in (*found, *journal):
                target.apply(memory_id, text)
            if install:
                self._stats[tenant] = target
                self._stats.move_to_end(tenant)
                total = sum(s.documents for s in self._stats.values())
                while total > STATS_CACHED_DOCUMENTS and len(self._stats) > 1:
                    _, evicted = self._stats.popitem(last=False)
                    total -= evicted.documents

    def _close_journal(self, tenant: str, journal: list[TermsOp]) -> None:
        journals = [j for j in self._journals.pop(tenant, []) if j is not journal]  # by identity: lists compare
        if journals:
            self._journals[tenant] = journals

    def _note_terms(self, tenant: str, ops: Sequence[TermsOp]) -> None:
        """This process's own terms writes to a tenant, once made: into its statistics, and into the journal of
        every read of it under way."""
        if not ops:
            return
        with self._stats_lock:
            stats = self._stats.get(tenant)
            if stats is not None:
                for memory_id, text in ops:
                    stats.apply(memory_id, text)
            for journal in self._journals.get(tenant, ()):
                journal.extend(ops)

    def _read_tenant(self, tenant: str, *, empty: bool = False) -> _TenantTerms:
        """Read every memory's terms in the tenant (with the cursor, which no offset limit stops) and install
        the result as its statistics."""
        fresh = _TenantTerms()
        fresh.mark = time.time_ns() // 1000  # writes from now on are read again by the next catch-up

        def everything() -> list[TermsOp]:
            if empty:
                return []
            try:
                return [(obj.properties["memory_id"], obj.properties.get("terms") or "")
                        for obj in self._in(tenant).iterator(return_properties=["memory_id", "terms"],
                                                             cache_size=PAGE)]
            except wx.WeaviateQueryError as exc:
                if _missing_tenant(exc):
                    return []
                raise

        self._read_terms(tenant, everything, fresh, install=True)
        return fresh

    def _catch_up(self, tenant: str, stats: _TenantTerms) -> None:
        """Read back the memories whose terms were written since ``stats.mark`` (by any process), reaching back
        ``SETTLE_S`` more while the newest write seen is that recent."""
        after = min(stats.mark, time.time_ns() // 1000 - int(SETTLE_S * 1_000_000))
        newest = [stats.mark]

        def changed() -> list[TermsOp]:
            found = self._all(self._in(tenant), Filter.by_property("terms_seq").greater_than(after),
                              ["memory_id", "terms", "terms_seq"], sort="terms_seq")
            newest.extend(int(obj.properties["terms_seq"]) for obj in found)
            return [(obj.properties["memory_id"], obj.properties.get("terms") or "") for obj in found]

        self._read_terms(tenant, changed, stats)
        with self._stats_lock:
            stats.mark = max(stats.mark, *newest)

    def _reread(self, tenant: str, stale: _TenantTerms) -> None:
        """The background full read: searches keep the statistics they have until it is installed."""
        try:
            self._read_tenant(tenant)
        except Exception as exc:  # the next search that finds the statistics due starts another
            if not self._closed:
                log.warning("could not re-read stage one's statistics for Weaviate tenant %s: %s", tenant, exc)
        finally:
            with self._stats_lock:
                stale.rereading = False

    @_boundary("search by substring")
    def substring_search(
        self, partition: Partition, *, query_text: str, limit: int, exclude_session: str | None,
        created_before: datetime, include_archived: bool = False,
    ) -> list[Candidate]:
        needles = [w for w in dict.fromkeys(words(query_text)) if len(w) > 2]
        if not needles:
            return []
        contains = Filter.any_of([Filter.by_property("folded").like(f"*{w}*") for w in needles])
        found = self._all(self._in(tenant_for(partition)),
                          Filter.all_of([*self._visible(exclude_session, created_before, include_archived),
                                         contains]),
                          ["memory_id", "folded"])
        out = []
        for obj in found:
            text = obj.properties["folded"]
            hits = sum(1 for w in needles if w in text)
            if hits:
                out.append(Candidate(memory_id=obj.properties["memory_id"], relevance=hits / len(needles),
                                     legs=(Leg.SUBSTRING,)))
        out.sort(key=lambda c: -c.relevance)
        return out[:limit]

    def close(self) -> None:
        self._closed = True
        self._client.close()


def _check_deleted(result: DeleteManyReturn[None]) -> None:
    if result.failed:
        raise BackendRejected(f"Weaviate failed to delete {result.failed} objects", backend=BACKEND)
