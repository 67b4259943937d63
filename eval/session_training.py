"""The session classifier's (v2) training inputs: feature blocks and the GoEmotions and EmoBank readers.

A block is what the heads of ``traces.session_classifier`` read: the embedding, VADER and cue features, and the
hashed counts. Used by ``eval.train_session_classifier`` and its report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.domain.models import REGISTERS
from eval.classifier_training import (
    FeatureBuilder,
    goemotions_registers,
    read_emobank_rows,
    read_goemotions_rows,
    single_register_rows,
    tfidf_matrix,
)
from eval.train_sets import Labelled
from traces.classifier import VaderFeatures
from traces.session_classifier import context_views, cue_features, hashed_token_counts

HASH_BITS = 16


@dataclass(frozen=True)
class Block:
    """A set of texts ready for the heads: the dense block and the hashed counts, plus labels."""

    texts: list[str]
    embeddings: NDArray[np.float32]
    dense: NDArray[np.float32]
    bucket_ids: list[NDArray[np.int64]]
    bucket_counts: list[NDArray[np.float32]]

    def hashed(self, idf: NDArray[np.float32]) -> Any:
        return tfidf_matrix(self.bucket_ids, self.bucket_counts, idf)


class Builder:
    def __init__(self, cache_dir: Path) -> None:
        self.features = FeatureBuilder(cache_dir)
        self._vader = VaderFeatures()

    def block(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Block:
        texts = list(texts)
        counted = [hashed_token_counts(t, 1 << HASH_BITS) for t in texts]
        dense = np.hstack([embeddings, self._vader(texts), cue_features(texts)]).astype(np.float32)
        return Block(texts, embeddings.astype(np.float32), dense, [i for i, _ in counted], [c for _, c in counted])

    def texts(self, key: str, texts: Sequence[str]) -> Block:
        return self.block(texts, self.features.embed(key, list(texts)))

    def labelled(self, key: str, data: Labelled) -> Block:
        """A labelled set's block; examples with a context get their context reading."""
        own = self.features.embed(key, data.texts)
        with_context = [i for i, c in enumerate(data.context) if c]
        if not with_context:
            return self.block(data.texts, own)
        befores = self.features.embed(f"{key}-context", [data.context[i] or "" for i in with_context])
        texts, vectors = list(data.texts), own.copy()
        for row, i in enumerate(with_context):
            joined, summed = context_views([data.context[i] or "", data.texts[i]],
                                           np.vstack([befores[row], own[i]]))
            texts[i], vectors[i] = joined[0], summed[0]
        return self.block(texts, vectors)


def read_goemotions(data_dir: Path, split: str) -> Labelled:
    texts, label_sets = read_goemotions_rows(data_dir, split)
    registers = [sorted(goemotions_registers(labels)) for labels in label_sets]
    return Labelled(texts, registers, [None] * len(texts), [None] * len(texts))


def read_goemotions_labels(data_dir: Path, split: str) -> list[list[str]]:
    return read_goemotions_rows(data_dir, split)[1]


def read_emobank(data_dir: Path, split: str) -> tuple[list[str], NDArray[np.float64], NDArray[np.float64]]:
    rows = [r for r in read_emobank_rows(data_dir) if r["split"] == split]
    return ([r["text"] for r in rows], np.array([float(r["V"]) for r in rows]),
            np.array([float(r["A"]) for r in rows]))


def rows_of(data: Labelled, weight: float) -> tuple[list[int], list[int], list[float]]:
    """One row per register of each text, weighted 1 / (number of registers) x ``weight``."""
    rows, targets, weights = [], [], []
    for row, registers in enumerate(data.registers):
        for register in registers:
            rows.append(row)
            targets.append(REGISTERS.index(register))
            weights.append(weight / len(registers))
    return rows, targets, weights


def single(data: Labelled) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    return single_register_rows(data.registers)
