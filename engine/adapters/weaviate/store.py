"""``WeaviateStore``: the MemoryStore port over a Weaviate server, composed of its writes, reads and search."""

from __future__ import annotations

import json
import threading

from engine.adapters.weaviate.base import CACHED_MEMORIES, Lru
from engine.adapters.weaviate.errors import BACKEND, translated
from engine.adapters.weaviate.reads import Reads
from engine.adapters.weaviate.schema import (
    DIRECTORY_SCHEMA,
    LEGACY_TURNS,
    MEMORY_SCHEMA,
    PREFIX_PATTERN,
    SESSION_SCHEMA,
    TURN_SCHEMA,
    check_memory_collection,
    connect,
    mark_legacy_turns,
    model_suffix,
    open_collection,
)
from engine.adapters.weaviate.search import Search, TermStatistics
from engine.adapters.weaviate.writes import Writes
from engine.domain.errors import ConfigurationError
from engine.domain.models import Memory


class WeaviateStore(Writes, Reads, Search):
    """The MemoryStore port over a Weaviate server. Thread-safe; writes are serialised within the process."""

    backend = BACKEND

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
        self._client = connect(url, grpc_port=grpc_port, api_key=api_key, timeout_s=timeout_s)
        suffix = model_suffix(embedding_model, dimension)
        try:
            with translated("open its collections"):
                self._memories = open_collection(
                    self._client, f"{collection_prefix}Memory_{suffix}", MEMORY_SCHEMA, multi_tenant=True,
                    description=json.dumps({"feltsense": "memories", "embedding_model": embedding_model,
                                            "dimension": dimension}),
                )
                check_memory_collection(self._memories, embedding_model, dimension)
                self._directory = open_collection(
                    self._client, f"{collection_prefix}MemoryDirectory_{suffix}", DIRECTORY_SCHEMA,
                    multi_tenant=False,
                    description="feltsense: where each memory lives (tenant, ingest order, vector or not)",
                )
                self._turns = open_collection(self._client, f"{collection_prefix}Turn", TURN_SCHEMA,
                                              multi_tenant=False, description="feltsense: every turn, as sent",
                                              before_migrating=mark_legacy_turns)
                # Turns stored before they recorded their tenant are found through their sessions' owners.
                self._legacy_turns = self._turns.config.get().description == LEGACY_TURNS
                self._sessions = open_collection(
                    self._client, f"{collection_prefix}Session", SESSION_SCHEMA, multi_tenant=False,
                    description="feltsense: each session's owner, closed time and pending-trace flag",
                )
        except BaseException:
            self._client.close()
            raise
        self._write_lock = threading.RLock()
        self._seq_lock = threading.Lock()
        self._last_seq = 0
        self._cached_memories: Lru[str, Memory] = Lru(CACHED_MEMORIES)
        self._tenants: Lru[str, str] = Lru(4 * CACHED_MEMORIES)  # memory id -> tenant (never changes)
        self._session_tenants: Lru[str, str] = Lru(CACHED_MEMORIES)  # owned session id -> tenant
        # memory id -> (read at, generation, trace, state) as search read them (see base.SNAPSHOT_S).
        self._snapshots: Lru[str, tuple[float, int, str | None, str | None]] = Lru(CACHED_MEMORIES)
        self._generation = 0
        # Stage one's statistics per tenant, and its tone candidates (see the package docstring).
        self._statistics = TermStatistics(self._memories)

    def close(self) -> None:
        self._statistics.closed = True
        self._client.close()
