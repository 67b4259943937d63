"""The model providers' ports: the embedder and the write-time classifier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import (
    ExtractedFact,
)


class Embedder(Protocol):
    """Text in, L2-normalised float32 rows out (one row per text)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class TraceClassification(Protocol):
    """One memory's classification: register (from ``engine.domain.models.REGISTERS``), valence, intensity."""

    @property
    def register(self) -> str: ...

    @property
    def valence(self) -> float: ...

    @property
    def intensity(self) -> float: ...

    @property
    def anchors(self) -> tuple[str, ...]:
        """Anchors the classifier found (a model that reads the session can); merged with the extracted ones."""
        ...

    @property
    def facts(self) -> tuple[str, ...]:
        """Durable facts, one sentence each; merged with the extracted ones."""
        ...

    @property
    def extracted(self) -> tuple[ExtractedFact, ...]:
        """The same facts with their slots (subject, relation), when the classifier finds them."""
        ...


class Classifier(Protocol):
    """Classifies one closed session's memories at write time, in conversation order (one call per session).

    ``embeddings`` are the memories' own vectors, already computed; a classifier that does not use them ignores
    them. Raise any exception on failure: the memories stay stored with pending traces and are retried.
    """

    @property
    def name(self) -> str:
        """name@version, written into every trace."""
        ...

    @property
    def per_sentence(self) -> bool:
        """True for a sentence-level model: the write-time pass then also classifies each sentence of a memory
        and keeps the most intense. A model that reads the whole session at once says False."""
        ...

    def classify(
        self, texts: Sequence[str], embeddings: NDArray[np.float32]
    ) -> Sequence[TraceClassification]: ...
