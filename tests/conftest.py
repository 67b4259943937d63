from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from engine.service import Engine
from tests.fakes import hashing_engine_in
from tests.servers.process import ServerProcess

if TYPE_CHECKING:
    from tests.servers.postgres import PostgresServer
    from tests.servers.redis import RedisServer
    from tests.servers.weaviate import WeaviateServer

Server = TypeVar("Server", bound=ServerProcess)

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
    engine = hashing_engine_in(tmp_path / "data")
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def onnx_embedder():  # type: ignore[no-untyped-def]
    from engine.adapters.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder()


def _session_server(request: pytest.FixtureRequest, prepare: Callable[[], Path],
                    start: Callable[[Path], Server]) -> Iterator[Server]:
    """Prepare the binary (with its progress shown even while pytest captures output), start the server, yield
    it and stop it."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        binary = prepare()
    server = start(binary)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def weaviate_server(request: pytest.FixtureRequest) -> Iterator[WeaviateServer]:
    """A real Weaviate server on 127.0.0.1 for the whole session, for tests marked ``weaviate``.

    The first use on a machine builds the pinned release from its Go module (minutes; the progress is shown
    even while pytest captures output) and caches it; see ``tests/servers/weaviate.py``.
    """
    from tests.servers import weaviate

    yield from _session_server(request, weaviate.build, weaviate.start)


@pytest.fixture(scope="session")
def redis_server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    """A real redis-server on 127.0.0.1 for the whole session, for tests marked ``redis``.

    When redis-server is missing, Debian's package is installed first (as root; apt's progress is shown even while
    pytest captures output); see ``tests/servers/redis.py``. Tests flush it (``redis_server.flush()``) as needed.
    """
    from tests.servers import redis

    yield from _session_server(request, redis.ensure, redis.start)


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[PostgresServer]:
    """A real PostgreSQL on 127.0.0.1 for the whole session, for tests marked ``postgres``.

    When initdb and postgres are missing, Debian's package is installed first (as root; apt's progress is shown even
    while pytest captures output); see ``tests/servers/postgres.py``. Each test takes its own database with
    ``postgres_server.fresh_database()`` (or the ``postgres_url`` fixture).
    """
    from tests.servers import postgres

    yield from _session_server(request, postgres.ensure, postgres.start)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's PostgreSQL: one per test."""
    return postgres_server.fresh_database()


# The session fixture each server marker stands for.
SERVER_MARKERS = {"weaviate_server": "weaviate", "postgres_server": "postgres"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Markers select what runs: a test that needs the server must say so, or `-m "not weaviate"` would start it.
    for item in items:
        for fixture, marker in SERVER_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                raise pytest.UsageError(f"{item.nodeid} uses the {fixture} fixture but is not marked {marker}")
