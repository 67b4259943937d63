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
    ``params.candidates * POOL_FACTOR`` results. The time filter (``created_at``, which has no range index) cost
    the server about as much as the rest of the query (14 of 31 ms at 10,000 memories); while no memory of the
    tenant this process has seen (``TenantTerms.newest``, the latest ``created_epoch`` its reads and writes met)
    is later than the bound, it is left out and checked on the rows that come back instead, and should one of them
    be later (another process wrote it since the catch-up read), the query is made again with the filter. No
    ``max_vector_distance``: Weaviate drops every hybrid
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
    searched gets a ``TenantTerms`` in this process: every memory's ``terms`` as stored, each term's
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

    Tone candidates come from the same cache: the full and catch-up reads also bring each memory's ``seq``,
    ``session_id``, trace status, kind, register, intensity, valence and ``created_epoch``, and this process's
    trace writes and deletions update them as they are made, so ``TenantTerms.tone`` holds every memory with a
    complete emotional trace. ``tone_candidates`` filters it by the thresholds and orders it by ``seq`` (the rows,
    order and episode numbers one filtered read sorted by ``seq`` would give), rebuilding its arrays only when a
    row changed: no read of the partition on any recall. Recall searches just before, which catches the tenant
    up; called on its own, it catches up first (the count and the catch-up read) when the last catch-up is older
    than ``TONE_CACHE_S``. So other processes' trace writes show at this process's next search, their deletions
    once the background read that the count mismatch starts ends.

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
    Lists (a session's turns or memories, the substring fallback's matches) are read a page
    at a time in ingest order, up to the server's ``QUERY_MAXIMUM_RESULTS`` (10,000 by default) per list.
    The hybrid query also returns its pool's ``trace`` and ``state``: ``get_traces`` and ``get_states`` answer
    from them for up to ``base.SNAPSHOT_S`` (1 s) while no write by this process came between (every write
    starts a new generation before and after it), which saves recall two reads by id a turn; another process's
    trace or state write shows at most that late.
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

from engine.adapters.weaviate.store import WeaviateStore

__all__ = ["WeaviateStore"]
