"""Stage one: the hybrid query that picks the pool and the raw leg material read from it, the per-tenant term
statistics BM25 needs (an in-process cache kept current by this process's writes, a catch-up read per search and
a background re-read), and the substring fallback. See the package docstring for the design and its numbers."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray
from weaviate import exceptions as wx
from weaviate.classes.query import Filter, FilterReturn, HybridFusion, MetadataQuery
from weaviate.collections import Collection

from engine.adapters.weaviate import base
from engine.adapters.weaviate.base import StoreBase, Stored, fetch_all, fetch_by_ids
from engine.adapters.weaviate.errors import BACKEND, boundary, missing_tenant
from engine.adapters.weaviate.schema import MEMORY_PROPERTIES, Props, as_datetime, memory_from, tenant_for
from engine.domain.errors import BackendRejected
from engine.domain.models import Candidate, Leg, Memory, MemoryKind, Partition, Trace, TraceStatus
from engine.domain.ports import LegScores, SearchRequest, ToneCandidates
from engine.domain.text import words

POOL_FACTOR = 3  # stage one's pool is this many times params.candidates (the embedded store's factor too)
STATS_CACHED_DOCUMENTS = 1_000_000  # memories whose terms the statistics caches hold, over all tenants
STATS_REREAD_S = 600.0  # a tenant's statistics are read again in full (in the background) this often
SETTLE_S = 2.0  # the catch-up read reaches back this far before the newest terms write it saw
HIDDEN_STATUSES = ("provisional", "revoked")  # never a search candidate
ARCHIVED = "archived"  # a search candidate only with include_archived
_EXPLAINED = re.compile(r"Result Set (keyword|vector),\w+\) Document [0-9a-fA-F-]+: original score ([-+0-9.eE]+)")

ToneRow = tuple[str, str, float, float, float]
"""A memory with a complete emotional trace: (session id, register, intensity, valence, created epoch)."""
KEEP = "keep"  # in a TermsOp: the write did not touch the memory's trace, so its tone row stays as it is
TermsOp = tuple[str, str | None] | tuple[str, str | None, "ToneRow | str | None", int | None, float | None]
"""(memory id, its ``terms`` as now stored or None: deleted[, its tone row as now stored: a ``ToneRow``, None (no
complete emotional trace) or ``KEEP`` (this write did not touch it; the default), and its ``seq`` and created
epoch if known])."""
# The pool's properties: a memory's, but its time as ``created_epoch`` (a number: parsing 120 date strings was a
# tenth of a search's client time); objects stored before ``created_epoch`` existed have their ``created_at`` read.
POOL_PROPERTIES = [*(p for p in MEMORY_PROPERTIES if p != "created_at"), "created_epoch", "terms", "seq", "trace",
                   "state"]
TONE_PROPERTIES = ["seq", "session_id", "trace_status", "kind", "register", "intensity", "valence", "created_epoch"]

log = logging.getLogger("feltsense.weaviate")


# -- the statistics caches -----------------------------------------------------------------------------------


def tone_row(props: Props) -> ToneRow | None:
    """A stored memory's tone row: present when its trace is complete and emotional (what ``tone_candidates``
    then filters by intensity and valence)."""
    if props.get("trace_status") != TraceStatus.COMPLETE.value or props.get("kind") != MemoryKind.EMOTIONAL.value:
        return None
    return (props["session_id"], props.get("register") or "", float(props["intensity"]), float(props["valence"]),
            float(props["created_epoch"]))


def _seq(props: Props) -> int | None:
    seq = props.get("seq")
    return None if seq is None else int(seq)


def _created(props: Props) -> float | None:
    created = props.get("created_epoch")
    return None if created is None else float(created)


def trace_tone(trace: Trace, memory: Memory) -> ToneRow | None:
    """The tone row a trace write leaves (``tone_row`` of the object as it then is)."""
    if trace.status is not TraceStatus.COMPLETE or trace.kind is not MemoryKind.EMOTIONAL:
        return None
    return (memory.session_id, trace.register, float(trace.intensity), float(trace.valence),
            float(memory.created_at.timestamp()))


class TenantTerms:
    """One tenant's stage-one statistics as this process knows them: each memory's ``terms`` as stored, each
    term's document frequency (memories whose ``terms`` hold it) and the total length, so the number of
    documents and the average length. ``put`` and ``drop`` are idempotent: a write replayed on a copy that
    already holds it changes nothing. Guarded by the store's statistics lock."""

    def __init__(self) -> None:
        self.terms: dict[str, str] = {}
        self.document_frequency: Counter[str] = Counter()
        self.total_length = 0
        self.mark = 0  # every terms write up to this terms_seq is counted (see TermStatistics._catch_up)
        self.read_at = time.monotonic()  # when the tenant was last read in full
        self.rereading = False  # a background read of the whole tenant is under way
        self.caught_up_at = time.monotonic()  # when the last catch-up (or full) read of the tenant ended
        # Tone candidates: every memory with a complete emotional trace, whatever the thresholds (filtered when
        # asked), kept by the same reads and writes as the terms; ``tone_version`` counts its changes, and
        # ``tone_built`` holds what ``tone_candidates`` built from it: (min_intensity, max_valence) ->
        # (version, candidates).
        self.tone: dict[str, ToneRow] = {}
        self.seqs: dict[str, int] = {}  # memory id -> seq (ingest order, never changes), as far as seen
        # The latest created_at (epoch seconds) of any memory seen (deleted ones too): infinite once a memory was
        # seen without it. While a search's time bound is past it, the time filter is left out (see ``search``).
        self.newest = -np.inf
        self.tone_version = 0
        self.tone_built: dict[tuple[float, float], tuple[int, ToneCandidates]] = {}

    @property
    def documents(self) -> int:
        return len(self.terms)

    @property
    def average_length(self) -> float:
        return self.total_length / len(self.terms) if self.terms else 0.0

    def apply(self, memory_id: str, text: str | None, tone: ToneRow | str | None = KEEP, seq: int | None = None,
              created: float | None = None) -> None:
        if text is None:
            self.drop(memory_id)
            self.seqs.pop(memory_id, None)
            tone = None
        else:
            if created is not None:
                self.newest = max(self.newest, created)
            elif memory_id not in self.terms:
                self.newest = np.inf
            self.put(memory_id, text)
            if seq is not None:
                self.seqs[memory_id] = seq
        if tone == KEEP:
            return
        if tone is None:
            if self.tone.pop(memory_id, None) is not None:
                self.tone_version += 1
        elif self.tone.get(memory_id) != tone:
            self.tone[memory_id] = tone  # type: ignore[assignment]
            self.tone_version += 1

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


class TermStatistics:
    """Stage one's statistics per tenant, least recently searched first, and the journals of the reads under
    way: each records this process's terms writes to the tenant made during its read, to replay on what it
    read. Thread-safe."""

    def __init__(self, memories: Collection[Props, None]) -> None:
        self._memories = memories
        self.tenants: OrderedDict[str, TenantTerms] = OrderedDict()
        self._journals: dict[str, list[list[TermsOp]]] = defaultdict(list)
        self._first_reads: dict[str, threading.Lock] = {}
        self.lock = threading.Lock()
        self.closed = False  # set when the store closes: no background read starts, and failures are quiet

    def _in(self, tenant: str) -> Collection[Props, None]:
        return self._memories.with_tenant(tenant)

    def frequencies(self, stats: TenantTerms, columns: Sequence[str]) -> tuple[NDArray[np.float64], int, float]:
        """Each column's document frequency, the number of documents and their average length, read together."""
        with self.lock:
            document_frequency = np.array([float(stats.document_frequency.get(term, 0)) for term in columns])
            return document_frequency, stats.documents, stats.average_length

    def current(self, tenant: str, total: int) -> TenantTerms:
        """The tenant's statistics, brought up to date given its object count: read in full the first time;
        after that one catch-up read, and a full read in the background when the count still differs or one is
        due."""
        with self.lock:
            stats = self.tenants.get(tenant)
            if stats is not None:
                self.tenants.move_to_end(tenant)
            first = self._first_reads.setdefault(tenant, threading.Lock()) if stats is None else None
        if stats is None:
            assert first is not None
            with first:  # one first read per tenant: concurrent searches of it wait for that one
                with self.lock:
                    stats = self.tenants.get(tenant)
                if stats is None:
                    stats = self._read_tenant(tenant, empty=total == 0)
                with self.lock:
                    self._first_reads.pop(tenant, None)
            return stats
        self._catch_up(tenant, stats)
        with self.lock:
            due = stats.documents != total or time.monotonic() - stats.read_at > STATS_REREAD_S
            start = due and not stats.rereading and not self.closed
            if start:
                stats.rereading = True
        if start:
            threading.Thread(target=self._reread, args=(tenant, stats), name="feltsense-weaviate-terms",
                             daemon=True).start()
        return stats

    def read(
        self, tenant: str, read: Callable[[], list[TermsOp]], target: TenantTerms, *, install: bool = False
    ) -> None:
        """Run a read of terms from the server and apply what it found to ``target``, then this process's own
        terms writes to the tenant made while it ran (they are at least as new as what it saw)."""
        journal: list[TermsOp] = []
        with self.lock:
            self._journals[tenant].append(journal)
        try:
            found = read()
        except BaseException:
            with self.lock:
                self._close_journal(tenant, journal)
            raise
        with self.lock:
            self._close_journal(tenant, journal)
            for op in (*found, *journal):
                target.apply(*op)
            if install:
                self.tenants[tenant] = target
                self.tenants.move_to_end(tenant)
                total = sum(s.documents for s in self.tenants.values())
                while total > STATS_CACHED_DOCUMENTS and len(self.tenants) > 1:
                    _, evicted = self.tenants.popitem(last=False)
                    total -= evicted.documents

    def _close_journal(self, tenant: str, journal: list[TermsOp]) -> None:
        journals = [j for j in self._journals.pop(tenant, []) if j is not journal]  # by identity: lists compare
        if journals:
            self._journals[tenant] = journals

    def note(self, tenant: str, ops: Sequence[TermsOp]) -> None:
        """This process's own terms writes to a tenant, once made: into its statistics, and into the journal of
        every read of it under way."""
        if not ops:
            return
        with self.lock:
            stats = self.tenants.get(tenant)
            if stats is not None:
                for op in ops:
                    stats.apply(*op)
            for journal in self._journals.get(tenant, ()):
                journal.extend(ops)

    def fresh(self, tenant: str, max_age_s: float, count: Callable[[], int]) -> TenantTerms:
        """The tenant's statistics as ``current`` leaves them, but with no read at all while its last catch-up
        is at most ``max_age_s`` old (recall's search caught it up moments before)."""
        with self.lock:
            stats = self.tenants.get(tenant)
            recent = stats is not None and time.monotonic() - stats.caught_up_at <= max_age_s
        if stats is not None and recent:
            return stats
        return self.current(tenant, count())

    def tone(self, stats: TenantTerms, min_intensity: float, max_valence: float) -> tuple[ToneCandidates, bool]:
        """The tenant's tone candidates at these thresholds, in ingest order, and whether they were built anew
        (they are rebuilt only when a tone row changed): the same rows, in the same order and with the same
        episode numbers, as one filtered read of the tenant sorted by ``seq`` would give."""
        key = (min_intensity, max_valence)
        with self.lock:
            built = stats.tone_built.get(key)
            if built is not None and built[0] == stats.tone_version:
                return built[1], False
            version = stats.tone_version
            seqs = stats.seqs
            rows = [(seqs.get(memory_id, np.inf), memory_id, row) for memory_id, row in stats.tone.items()
                    if row[2] >= min_intensity and row[3] <= max_valence]
        rows.sort(key=lambda r: (r[0], r[1]))
        episodes: dict[tuple[str, str], int] = {}  # (session, register) -> episode number
        episode = [episodes.setdefault((row[0], row[1]), len(episodes)) for _, _, row in rows]
        candidates = ToneCandidates(
            memory_ids=[memory_id for _, memory_id, _ in rows],
            episode=np.asarray(episode, dtype=np.int64),
            session_ids=[row[0] for _, _, row in rows],
            intensity=np.asarray([row[2] for _, _, row in rows], dtype=np.float64),
            valence=np.asarray([row[3] for _, _, row in rows], dtype=np.float64),
            created_epoch=np.asarray([row[4] for _, _, row in rows], dtype=np.float64),
        )
        with self.lock:
            stats.tone_built[key] = (version, candidates)
        return candidates, True

    def _read_tenant(self, tenant: str, *, empty: bool = False) -> TenantTerms:
        """Read every memory's terms in the tenant (with the cursor, which no offset limit stops) and install
        the result as its statistics."""
        fresh = TenantTerms()
        fresh.mark = time.time_ns() // 1000  # writes from now on are read again by the next catch-up

        def everything() -> list[TermsOp]:
            if empty:
                return []
            try:
                return [(obj.properties["memory_id"], obj.properties.get("terms") or "", tone_row(obj.properties),
                         _seq(obj.properties), _created(obj.properties)) for obj in self._in(tenant).iterator(
                            return_properties=["memory_id", "terms", *TONE_PROPERTIES], cache_size=base.PAGE)]
            except wx.WeaviateQueryError as exc:
                if missing_tenant(exc):
                    return []
                raise

        self.read(tenant, everything, fresh, install=True)
        with self.lock:
            fresh.caught_up_at = time.monotonic()
        return fresh

    def _catch_up(self, tenant: str, stats: TenantTerms) -> None:
        """Read back the memories whose terms were written since ``stats.mark`` (by any process), reaching back
        ``SETTLE_S`` more while the newest write seen is that recent."""
        after = min(stats.mark, time.time_ns() // 1000 - int(SETTLE_S * 1_000_000))
        newest = [stats.mark]

        def changed() -> list[TermsOp]:
            found = fetch_all(self._in(tenant), Filter.by_property("terms_seq").greater_than(after),
                              ["memory_id", "terms", "terms_seq", *TONE_PROPERTIES], sort="terms_seq")
            newest.extend(int(obj.properties["terms_seq"]) for obj in found)
            return [(obj.properties["memory_id"], obj.properties.get("terms") or "", tone_row(obj.properties),
                     _seq(obj.properties), _created(obj.properties)) for obj in found]

        self.read(tenant, changed, stats)
        with self.lock:
            stats.mark = max(stats.mark, *newest)
            stats.caught_up_at = time.monotonic()

    def _reread(self, tenant: str, stale: TenantTerms) -> None:
        """The background full read: searches keep the statistics they have until it is installed."""
        try:
            self._read_tenant(tenant)
        except Exception as exc:  # the next search that finds the statistics due starts another
            if not self.closed:
                log.warning("could not re-read stage one's statistics for Weaviate tenant %s: %s", tenant, exc)
        finally:
            with self.lock:
                stale.rereading = False



# -- the search legs -----------------------------------------------------------------------------------------


class Search(StoreBase):
    """The search half of the MemoryStore port: ``search`` (stage one's pool and its leg material) and
    ``substring_search`` (the fallback)."""

    _statistics: TermStatistics

    @staticmethod
    def _visible(exclude_session: str | None, created_before: datetime | None, include_archived: bool
                 ) -> list[FilterReturn]:
        """What recall may see: active memories (and archived ones with ``include_archived``), not from the
        caller's current session, not from after the turn's time.

        Status is filtered by what is excluded (``!=``), not by ``== "active"``: an object stored before the
        ``status`` property existed has no value for it and is active.
        """
        hidden = [*HIDDEN_STATUSES, *(() if include_archived else (ARCHIVED,))]
        visible = [Filter.by_property("status").not_equal(status) for status in hidden]
        if created_before is not None:  # None: no time bound (``search`` checks it on what comes back)
            visible.insert(0, Filter.by_property("created_at").less_or_equal(created_before))
        if exclude_session is not None:
            visible.append(Filter.by_property("session_id").not_equal(exclude_session))
        return visible

    @boundary("search")
    def search(self, request: SearchRequest) -> LegScores:
        # request.term_weights is unused: Weaviate's own hybrid query chooses the pool.
        query_vector, params = request.query_vector, request.params
        exclude_session, created_before = request.exclude_session, request.created_before
        include_archived = request.include_archived
        tenant = tenant_for(request.partition)
        columns = list(request.query_terms)
        total = self._count_in(tenant)
        if total == 0:  # an empty level (most canon and shared ones): nothing more to ask
            return LegScores.empty(len(columns))
        excluded = self._excluded(tenant, exclude_session, created_before, include_archived)
        if query_vector is None and not columns:
            return LegScores.empty(len(columns), excluded)
        stats = self._statistics.current(tenant, total)
        results: list[Stored] = []
        # The time filter costs the server more than the rest of the query (created_at has no range index). While
        # no memory of the tenant this process has seen is later than the bound, it is left out and checked on
        # what comes back instead; should a memory written meanwhile be later, the query is made again with it.
        with self._statistics.lock:
            timeless = stats.newest <= created_before.timestamp()
        timed = not timeless

        generation = self._generation

        def pool() -> list[TermsOp]:
            results.clear()
            try:
                results.extend(self._in(tenant).query.hybrid(
                    query=" ".join(dict.fromkeys(columns)),
                    vector=None if query_vector is None else np.asarray(query_vector, dtype=np.float32).tolist(),
                    # Strictly between 0 and 1 whenever there is a vector: at 0 or 1 Weaviate skips a leg, and
                    # both legs' results belong in the pool whatever the profile's weights.
                    alpha=min(max(params.vector_weight, 0.01), 0.99) if query_vector is not None else 0.0,
                    fusion_type=HybridFusion.RELATIVE_SCORE,
                    query_properties=["terms"],
                    filters=Filter.all_of(self._visible(exclude_session, created_before if timed else None,
                                                        include_archived)),
                    limit=params.candidates * POOL_FACTOR,
                    return_properties=POOL_PROPERTIES,
                    return_metadata=MetadataQuery(explain_score=True),
                ).objects)
            except wx.WeaviateQueryError as exc:
                if not missing_tenant(exc):
                    raise
            self._created_at(tenant, results)
            # What came back is the newest word on these memories' terms: their statistics follow it.
            return [(obj.properties["memory_id"], obj.properties.get("terms") or "", KEEP, _seq(obj.properties),
                     as_datetime(obj.properties["created_at"]).timestamp()) for obj in results]

        self._statistics.read(tenant, pool, stats)
        if timeless and any(as_datetime(obj.properties["created_at"]) > created_before for obj in results):
            timed = True
            self._statistics.read(tenant, pool, stats)
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
            self._remember(memory_from(obj.properties))  # recall asks for its candidates next
        self._keep_snapshot(results, generation)  # and for their states and traces
        document_frequency, documents, average_doc_length = self._statistics.frequencies(stats, columns)
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

    def _created_at(self, tenant: str, results: list[Stored]) -> None:
        """Give each pool object its ``created_at``: from ``created_epoch`` (exact to the microsecond: a float64
        of epoch seconds keeps it), else read (objects stored before ``created_epoch`` existed; one deleted since
        leaves the pool)."""
        legacy = {obj.uuid for obj in results if obj.properties.get("created_epoch") is None}
        read = {obj.uuid: obj.properties["created_at"]
                for obj in fetch_by_ids(self._in(tenant), list(legacy), ["created_at"])} if legacy else {}
        kept = []
        for obj in results:
            if obj.uuid in legacy:
                if obj.uuid not in read:
                    continue
                obj.properties["created_at"] = as_datetime(read[obj.uuid])
            else:
                obj.properties["created_at"] = datetime.fromtimestamp(float(obj.properties["created_epoch"]), UTC)
            kept.append(obj)
        results[:] = kept

    def _excluded(
        self, tenant: str, exclude_session: str | None, created_before: datetime, include_archived: bool
    ) -> int:
        """How many memories of the caller's current session recall would otherwise see (same rules as
        ``_visible``): read from that session's memories alone, which the ``session_id`` index finds at once."""
        if exclude_session is None:
            return 0
        hidden = {*HIDDEN_STATUSES, *(() if include_archived else (ARCHIVED,))}
        found = fetch_all(self._in(tenant), Filter.by_property("session_id").equal(exclude_session),
                          ["status", "created_at"])
        return sum(1 for obj in found if obj.properties.get("status") not in hidden
                   and as_datetime(obj.properties["created_at"]) <= created_before)

    @boundary("search by substring")
    def substring_search(
        self, partition: Partition, *, query_text: str, limit: int, exclude_session: str | None,
        created_before: datetime, include_archived: bool = False,
    ) -> list[Candidate]:
        needles = [w for w in dict.fromkeys(words(query_text)) if len(w) > 2]
        if not needles:
            return []
        contains = Filter.any_of([Filter.by_property("folded").like(f"*{w}*") for w in needles])
        found = fetch_all(self._in(tenant_for(partition)),
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
