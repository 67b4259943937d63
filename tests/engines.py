"""An engine over either store, for the tests that run the same scenario on the embedded store and on Weaviate."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.ports import Embedder, MemoryStore
from engine.service import Engine
from tests.fakes import KeywordClassifier

# For ``@pytest.fixture(params=STORES)``: the embedded store always, Weaviate in the tests marked ``weaviate``.
STORES = ["embedded", pytest.param("weaviate", marks=pytest.mark.weaviate)]


@contextlib.contextmanager
def engine_on(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder, *, ledger: SqliteLedger,
              prefix: str) -> Iterator[Engine]:
    """The keyword-classifier engine on the store ``request.param`` names: an embedded store in ``tmp_path/data``,
    or collections named ``prefix`` plus a random suffix on the session's Weaviate server (dropped afterwards)."""
    server = None
    store: MemoryStore
    if request.param == "embedded":
        store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    else:
        from engine.adapters.weaviate import WeaviateStore

        server = request.getfixturevalue("weaviate_server")
        prefix = f"{prefix}{uuid.uuid4().hex[:10]}"
        store = WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=embedder.model_id,
                              dimension=embedder.dimension, collection_prefix=prefix, timeout_s=30)
    built = Engine(store=store, embedder=embedder, classifier=KeywordClassifier(), ledger=ledger)
    yield built
    built.close()
    if server is not None:
        server.drop_collections(prefix)
