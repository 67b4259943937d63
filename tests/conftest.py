from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.service import Engine
from tests.fakes import KeywordClassifier

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
    engine = Engine(store=store, embedder=embedder, classifier=KeywordClassifier())
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def onnx_embedder():  # type: ignore[no-untyped-def]
    from engine.adapters.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder()
