"""The store backends every contract test runs against: the embedded store, and Weaviate (marked ``weaviate``:
a real server from the session fixture, and a collection prefix of the test's own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.domain.ports import MemoryStore

EMBEDDER = HashingEmbedder()


class StoreFactory(Protocol):
    """Opens the backend's store for a test; called again with the same path, it reopens the same data."""

    def __call__(
        self, path: Path, *, embedding_model: str = EMBEDDER.model_id, dimension: int = EMBEDDER.dimension
    ) -> MemoryStore: ...


def embedded(
    path: Path, *, embedding_model: str = EMBEDDER.model_id, dimension: int = EMBEDDER.dimension
) -> MemoryStore:
    return EmbeddedStore(path, embedding_model=embedding_model, dimension=dimension)


@pytest.fixture(params=["embedded", pytest.param("weaviate", marks=pytest.mark.weaviate)])
def factory(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    if request.param == "embedded":
        yield embedded
        return
    from engine.adapters.weaviate import WeaviateStore

    server = request.getfixturevalue("weaviate_server")
    prefix = f"Contract{uuid.uuid4().hex[:10]}"

    def weaviate(
        path: Path, *, embedding_model: str = EMBEDDER.model_id, dimension: int = EMBEDDER.dimension
    ) -> MemoryStore:
        return WeaviateStore(server.url, grpc_port=server.grpc_port, embedding_model=embedding_model,
                             dimension=dimension, collection_prefix=prefix, timeout_s=30)

    yield weaviate
    server.drop_collections(prefix)


@pytest.fixture
def store(factory: StoreFactory, tmp_path: Path) -> Iterator[MemoryStore]:
    s = factory(tmp_path)
    yield s
    s.close()


