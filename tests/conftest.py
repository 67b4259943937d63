from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.service import Engine
from tests.fakes import KeywordClassifier

if TYPE_CHECKING:
    from tests.servers.redis import RedisServer
    from tests.servers.weaviate import WeaviateServer

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a clear skip when the shared folder is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not found: ../shared is not laid beside this checkout")
    return path


@pytest.fixture
def hashing_engine(tmp_path: Path) -> Iterator[Engine]:
    """A fast engine for unit and API tests: hashing embedder, keyword classifier, embedded store."""
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    engine = Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=KeywordClassifier())
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def onnx_embedder():  # type: ignore[no-untyped-def]
    from engine.adapters.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder()


@pytest.fixture(scope="session")
def weaviate_server(request: pytest.FixtureRequest) -> Iterator[WeaviateServer]:
    """A real Weaviate server on 127.0.0.1 for the whole session, for tests marked ``weaviate``.

    The first use on a machine builds the pinned release from its Go module (minutes; the progress is shown
    even while pytest captures output) and caches it; see ``tests/servers/weaviate.py``.
    """
    from tests.servers import weaviate

    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        binary = weaviate.build()
    server = weaviate.start(binary)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    """A real redis-server on 127.0.0.1 for the whole session, for tests marked ``redis``.

    When redis-server is missing, Debian's package is installed first (as root; apt's progress is shown even while
    pytest captures output); see ``tests/servers/redis.py``. Tests flush it (``redis_server.flush()``) as needed.
    """
    from tests.servers import redis

    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        binary = redis.ensure()
    server = redis.start(binary)
    yield server
    server.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Markers select what runs: a test that needs the server must say so, or `-m "not weaviate"` would start it.
    for item in items:
        if "weaviate_server" in getattr(item, "fixturenames", ()) and item.get_closest_marker("weaviate") is None:
            raise pytest.UsageError(f"{item.nodeid} uses the weaviate_server fixture but is not marked weaviate")
