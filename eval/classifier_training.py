"""What training the write-time classifiers shares: features, the GoEmotions and EmoBank readers, the metrics,
the fitting helpers and the weights' export.

The features are exactly the runtime's (``traces.classifier``): the embedding, VADER and hashed tf-idf counts.
Embeddings are cached under the cache folder, keyed by model, data set, split and a hash of the texts.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]
from numpy.typing import NDArray

from engine.adapters.onnx_embedder import MODEL_ID, OnnxEmbedder
from engine.domain.models import REGISTERS
from eval.train_classifier_data import GOEMOTIONS_TO_REGISTER
from traces.classifier import EMBEDDING_DIMENSION, VaderFeatures, hashed_token_counts, tfidf_values

HASH_BITS = 16  # 65,536 buckets: collisions cost < 0.005 macro-F1 against 2^18 in exploration; weights stay small
BIAS_GRID = np.round(np.arange(-1.5, 1.51, 0.1), 2)

Loaded = TypeVar("Loaded")


def logger(name: str) -> Callable[[str], None]:
    """A progress logger for stderr, each line tagged ``[name]``."""

    def log(message: str) -> None:
        print(f"[{name}] {message}", file=sys.stderr, flush=True)

    return log


log = logger("train_classifier")


def tfidf_matrix(bucket_ids: list[NDArray[np.int64]], bucket_counts: list[NDArray[np.float32]],
                 idf: NDArray[np.float32]) -> Any:
    """Hashed counts as tf-idf rows in a scipy CSR matrix, with exactly the runtime's weighting."""
    values = [tfidf_values(c, idf[i]) for i, c in zip(bucket_ids, bucket_counts, strict=True)]
    indptr = np.concatenate([[0], np.cumsum([len(i) for i in bucket_ids])])
    indices = np.concatenate(bucket_ids) if bucket_ids else np.zeros(0, np.int64)
    data = np.concatenate(values) if values else np.zeros(0, np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(bucket_ids), len(idf)))


def goemotions_registers(labels: Sequence[str]) -> set[str]:
    """The registers of a GoEmotions comment's labels; grief absorbs sadness."""
    registers = {GOEMOTIONS_TO_REGISTER[label] for label in labels}
    if "grief" in registers:
        registers.discard("sadness")
    return registers


def single_register_rows(register_sets: Sequence[Sequence[str] | set[str]],
                         ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The rows with exactly one register, and that register's index."""
    rows = [row for row, registers in enumerate(register_sets) if len(registers) == 1]
    targets = [REGISTERS.index(next(iter(register_sets[row]))) for row in rows]
    return np.array(rows, dtype=np.int64), np.array(targets, dtype=np.int64)


def read_goemotions_rows(data_dir: Path, split: str) -> tuple[list[str], list[list[str]]]:
    """GoEmotions' texts of ``split`` and each one's label names."""
    folder = data_dir / "goemotions"
    label_names = (folder / "original_labels.txt").read_text(encoding="utf-8").split()
    texts, label_sets = [], []
    with (folder / f"original_{split}.tsv").open(encoding="utf-8", newline="") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line:
                continue
            text, label_ids, _comment_id = line.split("\t")
            texts.append(text)
            label_sets.append([label_names[int(i)] for i in label_ids.split(",")])
    return texts, label_sets


def read_emobank_rows(data_dir: Path) -> list[dict[str, str]]:
    with (data_dir / "emobank" / "emobank.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def export_weights(arrays: dict[str, NDArray[Any]], path: Path, major: int,
                   load: Callable[[Path], Loaded]) -> Loaded:
    """Stamp ``arrays`` with a version (``major`` and a digest of the arrays), write them to ``path``, load them."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        if name != "version":
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    arrays["version"] = np.array(f"{major}.{digest.hexdigest()[:10]}")
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    return load(path)


@dataclass(frozen=True)
class Features:
    """Everything a text contributes before any head: the dense block (embedding + VADER) and hashed counts."""

    texts: list[str]
    dense: NDArray[np.float32]  # (n, EMBEDDING_DIMENSION + 4)
    bucket_ids: list[NDArray[np.int64]]
    bucket_counts: list[NDArray[np.float32]]

    def __len__(self) -> int:
        return len(self.texts)

    def hashed(self, idf: NDArray[np.float32]) -> Any:
        """The tf-idf rows as a scipy CSR matrix, with exactly the runtime's weighting."""
        return tfidf_matrix(self.bucket_ids, self.bucket_counts, idf)


@dataclass(frozen=True)
class GoEmotionsSplit:
    features: Features
    label_sets: list[list[str]]  # GoEmotions label names per comment

    def registers(self) -> list[set[str]]:
        return [goemotions_registers(labels) for labels in self.label_sets]

    def single_register(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Rows left with exactly one register, and that register's index: the evaluation set."""
        return single_register_rows(self.registers())

    def strict_single_register(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Rows whose labels map to one register without the grief-absorbs-sadness rule (for comparison)."""
        return single_register_rows([{GOEMOTIONS_TO_REGISTER[label] for label in labels} for labels in self.label_sets])


@dataclass(frozen=True)
class EmoBankSplit:
    features: Features
    valence: NDArray[np.float64]  # 1-5
    arousal: NDArray[np.float64]  # 1-5


class FeatureBuilder:
    def __init__(self, cache_dir: Path) -> None:
        self._cache_dir = cache_dir
        self._embedder: OnnxEmbedder | None = None
        self._vader = VaderFeatures()

    def embed(self, key: str, texts: Sequence[str]) -> NDArray[np.float32]:
        digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:16]
        path = self._cache_dir / f"{MODEL_ID}-{key}-{digest}.npy"
        if path.is_file():
            cached = np.load(path, allow_pickle=False)
            if cached.shape == (len(texts), EMBEDDING_DIMENSION):
                return np.asarray(cached, dtype=np.float32)
        if self._embedder is None:
            self._embedder = OnnxEmbedder(intra_op_threads=2)
        started = time.perf_counter()
        vectors = self._embedder.embed(list(texts))
        log(f"embedded {key}: {len(texts)} texts in {time.perf_counter() - started:.0f}s")
        if key != "adhoc":
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            np.save(path, vectors)
        return vectors

    def build(self, key: str, texts: Sequence[str]) -> Features:
        texts = list(texts)
        n_buckets = 1 << HASH_BITS
        counted = [hashed_token_counts(text, n_buckets) for text in texts]
        dense = np.hstack([self.embed(key, texts), self._vader(texts)]).astype(np.float32)
        return Features(texts, dense, [ids for ids, _ in counted], [counts for _, counts in counted])


def read_goemotions(data_dir: Path, split: str, builder: FeatureBuilder) -> GoEmotionsSplit:
    texts, label_sets = read_goemotions_rows(data_dir, split)
    return GoEmotionsSplit(builder.build(f"goemotions-{split}", texts), label_sets)


def read_emobank(data_dir: Path, builder: FeatureBuilder,
                 splits: Sequence[str] = ("train", "dev", "test")) -> dict[str, EmoBankSplit]:
    rows = read_emobank_rows(data_dir)
    out = {}
    for split in splits:
        chosen = [row for row in rows if row["split"] == split]
        out[split] = EmoBankSplit(
            builder.build(f"emobank-{split}", [row["text"] for row in chosen]),
            np.array([float(row["V"]) for row in chosen]),
            np.array([float(row["A"]) for row in chosen]),
        )
    return out


def document_frequency_idf(corpora: Sequence[Features], n_buckets: int) -> NDArray[np.float32]:
    document_frequency = np.zeros(n_buckets, dtype=np.float64)
    n_documents = 0
    for features in corpora:
        for ids in features.bucket_ids:
            document_frequency[ids] += 1
        n_documents += len(features)
    return (np.log((1 + n_documents) / (1 + document_frequency)) + 1.0).astype(np.float32)


def macro_f1(targets: NDArray[np.int64], predicted: NDArray[np.int64]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(targets, predicted, average="macro", labels=list(range(len(REGISTERS))), zero_division=0))


def pearson(a: NDArray[Any], b: NDArray[Any]) -> float:
    return float(np.corrcoef(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))[0, 1])


def fit_logistic(features: Any, targets: NDArray[np.int64], weights: NDArray[np.float64], c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=3000, tol=1e-4).fit(features, targets, sample_weight=weights)


def tune_register_bias(logits: NDArray[np.float64], targets: NDArray[np.int64], *,
                       rounds: int = 3) -> NDArray[np.float64]:
    """Per-register logit offsets maximising dev macro-F1 (coordinate ascent; grief is left at 0)."""
    bias = np.zeros(len(REGISTERS))
    grief = REGISTERS.index("grief")
    for _ in range(rounds):
        for register in range(len(REGISTERS)):
            if register == grief:
                continue
            scores = []
            for offset in BIAS_GRID:
                trial = bias.copy()
                trial[register] = offset
                scores.append(macro_f1(targets, np.argmax(logits + trial, axis=1)))
            bias[register] = BIAS_GRID[int(np.argmax(scores))]  # first maximum: the smallest offset wins ties
    return bias


def affect_columns(models: Sequence[Any], hashed_weights: NDArray[np.float64], n_dense: int, block_scale: Any,
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Split each affect ridge model (in column order) into its hashed weights, written into ``hashed_weights``
    after the registers' columns, and its dense weights (rescaled by ``block_scale``) and bias, returned."""
    affect_dense = np.zeros((n_dense, len(models)))
    affect_bias = np.zeros(len(models))
    for column, model in enumerate(models):
        hashed_weights[:, len(REGISTERS) + column] = model.coef_[n_dense:]
        affect_dense[:, column] = model.coef_[:n_dense] * block_scale
        affect_bias[column] = model.intercept_
    return affect_dense, affect_bias


def register_arrays(format_name: str, emotion_names: Sequence[str], idf: NDArray[np.float32],
                    hashed_weights: NDArray[np.float64], register_coef: NDArray[Any], dense_width: int,
                    register_bias: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """The weights' arrays both classifiers begin with: format, labels, idf and the register head's logistic part."""
    return {
        "format": np.array(format_name),
        "registers": np.array(REGISTERS),
        "emotions": np.array(emotion_names),
        "idf": idf.astype(np.float16),
        # float16 halves the file; the exported model is what the report scores, so the rounding is measured.
        "hashed_weights": hashed_weights.astype(np.float16),
        "register_dense_weights": register_coef[:, :dense_width].T.astype(np.float32),
        "register_bias": register_bias.astype(np.float32),
    }


def run_details(classifier_name: str, seed: int, training_seconds: float, weights_path: Path) -> dict[str, Any]:
    """What a training report says of its run: the classifier, when, the seed, how long, how big, on what."""
    return {
        "classifier": classifier_name,
        "date": dt.date.today().isoformat(),
        "seed": seed,
        "training_seconds": round(training_seconds, 1),
        "weights_bytes": weights_path.stat().st_size,
        "platform": f"{platform.python_version()} on {platform.machine()}",
    }
