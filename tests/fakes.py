"""Fakes for tests. Each passes the same contract suite as the real adapter it stands in for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.models import ExtractedFact
from engine.service import Engine


@dataclass(frozen=True)
class FakeClassification:
    register: str
    valence: float
    intensity: float
    anchors: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    extracted: tuple[ExtractedFact, ...] = ()


class KeywordClassifier:
    """A deterministic classifier by keyword, so engine tests do not depend on trained weights."""

    name = "keyword-fake@1"
    per_sentence = False
    RULES: tuple[tuple[tuple[str, ...], FakeClassification], ...] = (
        (("died", "passed away", "funeral", "miss her", "miss him"), FakeClassification("grief", -0.85, 0.9)),
        (("sad", "not great", "lonely"), FakeClassification("sadness", -0.6, 0.6)),
        (("nervous", "worried", "anxious"), FakeClassification("anxiety", -0.5, 0.6)),
        (("furious", "angry"), FakeClassification("anger", -0.7, 0.7)),
        (("relieved", "relief", "came back clear", "came back fine", "apologised"),
         FakeClassification("joy", 0.7, 0.6)),
        (("love", "lovely", "amazing", "great news"), FakeClassification("joy", 0.8, 0.7)),
    )

    def __init__(self) -> None:
        self.calls = 0

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[FakeClassification]:
        if len(texts) != len(embeddings):
            raise ValueError(f"{len(texts)} texts but {len(embeddings)} embeddings")
        self.calls += 1
        out = []
        for text in texts:
            lowered = text.lower()
            found = next((c for words, c in self.RULES if any(w in lowered for w in words)), None)
            out.append(found or FakeClassification("neutral", 0.0, 0.1))
        return out


class BrokenClassifier:
    """Fails like a provider outage would."""

    name = "broken@1"
    per_sentence = False

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[FakeClassification]:
        raise ConnectionError("classifier unreachable")


class BrokenEmbedder:
    """An embedder whose provider is down: every call fails."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return "broken"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise ConnectionError("embedder unreachable")


def hashing_engine_in(data_dir: Path, embedder: HashingEmbedder | None = None, *,
                      embedder_down: bool = False) -> Engine:
    """A fast real engine: the hashing embedder, the keyword classifier, an embedded store in ``data_dir`` and an
    in-memory ledger. It keeps memories and traces; the caller closes it. With ``embedder_down`` the store is the
    hashing embedder's but every embedding fails (``BrokenEmbedder``)."""
    embedder = embedder or HashingEmbedder()
    store = EmbeddedStore(data_dir, embedding_model=embedder.model_id, dimension=embedder.dimension)
    serving = BrokenEmbedder(embedder.dimension) if embedder_down else embedder
    return Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=serving, classifier=KeywordClassifier())
