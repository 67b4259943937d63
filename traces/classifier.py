"""The offline default write-time classifier: emotional register, valence and intensity of a memory.

Numpy only at runtime. The weights (``traces/data/classifier.npz``) are trained by ``eval/train_classifier.py``
on GoEmotions (register) and EmoBank (valence, arousal); ``traces/data/classifier_report.md`` holds the held-out
scores. Every text is described by three feature blocks:

- its MiniLM embedding, which the engine has already computed (``classify`` never embeds);
- VADER's four polarity scores (neg, neu, pos, compound): a hand-built lexicon with negation rules, which lifts
  valence where the small training sets are thin;
- hashed, tf-idf weighted word unigrams and bigrams: emotion is often carried by a single word ("died",
  "furious") that a mean-pooled sentence vector dilutes.

Heads, in order (each may read the outputs of the ones before it):

1. register: multinomial logistic regression over all three blocks, plus per-register bias offsets tuned on the
   GoEmotions dev split for macro-F1;
2. emotion28: a small logistic regression over the 27 GoEmotions emotions plus neutral, on embedding + VADER; its
   probabilities carry GoEmotions' finer distinctions into the valence head;
3. valence and arousal (EmoBank's 1-5 scale): a ridge regression over every block and both heads' probabilities,
   averaged with a small one-hidden-layer MLP on the dense features.

Outputs:

- ``valence`` = clip(valence_stretch x (V - 3) / 2, -1, 1), V the predicted EmoBank valence. The stretch maps
  the 99th percentile of human |V - 3| / 2 (EmoBank train) to 1: predictions are shrunk towards 3, and text as
  extreme as the most extreme 1% of human ratings should read as fully positive or negative.
- ``intensity`` in [0, 1], a noisy-OR of how much feeling the words carry and how heavy the register is::

      arousal_excess  = clip((A - arousal_floor) / (arousal_ceiling - arousal_floor), 0, 1)
      extremity       = clip((|valence| - extremity_floor) / (extremity_ceiling - extremity_floor), 0, 1)
      affect          = ((arousal_excess + extremity) / 2) ** AFFECT_EXPONENT
      register_weight = sum over registers of P(register) x register_intensity[register]
      intensity       = 1 - (1 - affect) x (1 - register_weight)

  Calibration (stored with the weights): the floors are the medians over GoEmotions dev texts labelled neutral,
  so flat text scores 0; the arousal ceiling is the 99th percentile of human arousal on EmoBank train and the
  extremity ceiling is 1 (the valence stretch already put the human 99th percentile there). The exponent keeps
  mildly pleasant or mildly tired remarks from reading as intense. ``register_intensity`` is a fixed prior (grief
  0.9, the negative registers 0.6, joy 0.5, affection and pride 0.45, curiosity 0.15, neutral 0). The register term
  is what makes "my dog died last week" intense although EmoBank rates sadness as low-arousal; small talk is
  neutral or curiosity, low on every channel, and stays low.
"""

from __future__ import annotations

import itertools
import re
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import ConfigurationError
from engine.domain.models import REGISTERS, ExtractedFact

DEFAULT_WEIGHTS_PATH = Path(__file__).parent / "data" / "classifier.npz"
FORMAT = "feltsense-classifier-v1"
"""The layout of the weights file; bump it (and the loader) when arrays are added, renamed or change meaning."""

EMBEDDING_DIMENSION = 384
VADER_FEATURES = 4
AFFECT_EXPONENT = 1.5

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# The weights' arrays: name -> number of dimensions; the loader checks both presence and rank, then the shapes
# against each other. Both classifiers' files start with these (what the file is, the hashed features and the
# register head's linear part), and hold the emotion28 and affect heads.
LINEAR_RANKS: dict[str, int] = {
    "format": 0, "version": 0, "registers": 1, "idf": 1, "hashed_weights": 2, "register_dense_weights": 2,
    "register_bias": 1,
}
AFFECT_RANKS: dict[str, int] = {
    "emotion28_weights": 2, "emotion28_bias": 1, "affect_dense_weights": 2, "affect_bias": 1,
}
_ARRAYS: dict[str, int] = {
    **LINEAR_RANKS,
    **AFFECT_RANKS,
    "mlp_hidden_weights": 3, "mlp_hidden_bias": 2, "mlp_output_weights": 3, "mlp_output_bias": 2, "mlp_target_mean": 1,
    "mlp_target_scale": 1, "mlp_mix": 0, "valence_stretch": 0, "register_intensity": 1, "intensity_calibration": 1,
}


@dataclass(frozen=True)
class Classification:
    register: str  # one of engine.domain.models.REGISTERS
    valence: float  # [-1, 1]
    intensity: float  # [0, 1]
    register_scores: dict[str, float]  # probability per register
    anchors: tuple[str, ...] = ()  # this classifier finds none; the write-time pass extracts them
    facts: tuple[str, ...] = ()  # likewise
    extracted: tuple[ExtractedFact, ...] = ()  # likewise (traces.facts.extract)


@dataclass(frozen=True)
class Predictions:
    """The batch form of ``classify``, as arrays (row i describes text i); the evaluation scores these."""

    register_probabilities: NDArray[np.float32]  # (n, len(REGISTERS)), rows sum to 1
    valence_1to5: NDArray[np.float32]  # (n,) predicted EmoBank valence, 1-5 scale
    arousal_1to5: NDArray[np.float32]  # (n,) predicted EmoBank arousal, 1-5 scale
    valence: NDArray[np.float32]  # (n,) in [-1, 1]
    intensity: NDArray[np.float32]  # (n,) in [0, 1]


def hashed_token_counts(text: str, n_buckets: int, pattern: re.Pattern[str] = _TOKEN
                        ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Bucket ids and counts of a text's lower-cased word unigrams and bigrams (``pattern`` finds the words).

    crc32, not Python's ``hash``: bucket ids must be identical across processes and machines, since the trained
    weights are indexed by them.
    """
    words = pattern.findall(text.lower().replace("\u2019", "'"))
    counts: dict[int, int] = {}
    for token in (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))):
        bucket = zlib.crc32(token.encode("utf-8")) % n_buckets
        counts[bucket] = counts.get(bucket, 0) + 1
    return (
        np.fromiter(counts.keys(), dtype=np.int64, count=len(counts)),
        np.fromiter(counts.values(), dtype=np.float32, count=len(counts)),
    )


def tfidf_values(counts: NDArray[np.float32], idf: NDArray[np.float32]) -> NDArray[np.float32]:
    """Sublinear tf x idf, L2-normalised, so long turns do not outweigh short ones."""
    values = (1.0 + np.log(counts)) * idf
    norm = float(np.sqrt(np.dot(values, values)))
    return (values / max(norm, 1e-12)).astype(np.float32)


class VaderFeatures:
    """VADER's neg, neu, pos and compound scores per text. Builds the lexicon once (it is read from disk)."""

    def __init__(self) -> None:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

        self._analyzer = SentimentIntensityAnalyzer()

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), VADER_FEATURES), dtype=np.float32)
        for row, text in enumerate(texts):
            scores = self._analyzer.polarity_scores(text)
            out[row] = (scores["neg"], scores["neu"], scores["pos"], scores["compound"])
        return out


def softmax(logits: NDArray[np.float32]) -> NDArray[np.float32]:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    probabilities: NDArray[np.float32] = (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)
    return probabilities


def load_arrays(path: Path, ranks: dict[str, int], expected_format: str, *, trainer: str
                ) -> dict[str, NDArray[np.generic]]:
    """A weights file's arrays, each present with its rank and the file in ``expected_format``. Raises
    ConfigurationError naming the file (and the command that trains it) if it is unusable."""
    if not path.is_file():
        raise ConfigurationError(f"classifier weights not found at {path}; train them with `python -m {trainer}`")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ConfigurationError(f"classifier weights at {path} are unreadable: {exc}") from exc
    for name, rank in ranks.items():
        if name not in arrays:
            raise ConfigurationError(f"classifier weights at {path} lack the array {name!r}")
        if arrays[name].ndim != rank:
            raise ConfigurationError(
                f"classifier weights at {path}: {name} has {arrays[name].ndim} dimensions, expected {rank}"
            )
    if str(arrays["format"]) != expected_format:
        raise ConfigurationError(
            f"classifier weights at {path} have format {arrays['format']!s}, this code reads {expected_format}"
        )
    return arrays


def validated_embeddings(texts: Sequence[str], embeddings: NDArray[np.float32]) -> NDArray[np.float32]:
    """``embeddings`` as float32, after checking they fit ``texts``: a clear ValueError otherwise."""
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a single string")
    array = np.asarray(embeddings)
    if array.ndim != 2:
        raise ValueError(
            f"embeddings must be 2-dimensional (n_texts, {EMBEDDING_DIMENSION}), got shape {array.shape}"
        )
    if array.shape[0] != len(texts):
        raise ValueError(f"got {len(texts)} texts but {array.shape[0]} embedding rows")
    if array.shape[1] != EMBEDDING_DIMENSION:
        raise ValueError(f"embeddings have {array.shape[1]} columns, expected {EMBEDDING_DIMENSION}")
    if not np.all(np.isfinite(array)):
        raise ValueError("embeddings contain NaN or infinite values")
    return array.astype(np.float32, copy=False)


def float32_arrays(arrays: dict[str, NDArray[np.generic]]) -> Callable[[str], NDArray[np.float32]]:
    """A reader of ``arrays`` by name, each as a contiguous float32 array."""

    def f32(name: str) -> NDArray[np.float32]:
        return np.ascontiguousarray(arrays[name], dtype=np.float32)

    return f32


Shapes = dict[str, tuple[tuple[int, ...], tuple[int, ...]]]
"""Array name -> (the shape the heads need, the shape the file has)."""


@dataclass(frozen=True)
class WeightsFile:
    """A classifier's shipped weights: where they are, their arrays' ranks and format, what trains them, and the
    name the classifier goes by (with the weights' version)."""

    path: Path
    ranks: dict[str, int]
    format: str
    trainer: str
    label: str


class TrainedClassifier:
    """What the shipped classifiers share: weights trained for ``REGISTERS`` and checked against the shapes their
    heads need, an intensity calibration, and ``classify`` read off ``predict``."""

    weights: ClassVar[WeightsFile]

    def __init__(self, arrays: dict[str, NDArray[np.generic]], *, source: str) -> None:
        """The arrays both classifiers have (``LINEAR_RANKS``, ``AFFECT_RANKS``, the valence stretch and the
        intensity calibration); each reads its own heads after these, then checks the shapes."""
        self._source = source
        self._version = str(arrays["version"])
        registers = tuple(str(r) for r in arrays["registers"])
        if registers != REGISTERS:
            raise ConfigurationError(
                f"classifier weights at {source} were trained for registers {registers}, expected {REGISTERS}"
            )
        f32 = float32_arrays(arrays)
        self._idf = f32("idf")
        self._hashed_weights = f32("hashed_weights")
        self._register_dense = f32("register_dense_weights")
        self._register_bias = f32("register_bias")
        self._emotion28_weights = f32("emotion28_weights")
        self._emotion28_bias = f32("emotion28_bias")
        self._affect_dense = f32("affect_dense_weights")
        self._affect_bias = f32("affect_bias")
        self._valence_stretch = float(arrays["valence_stretch"])
        (self._arousal_floor, self._arousal_ceiling,
         self._extremity_floor, self._extremity_ceiling) = (float(x) for x in f32("intensity_calibration"))

    @classmethod
    def load(cls, path: Path | None = None) -> Self:
        """Load the shipped weights (or ``path``). Raises ConfigurationError naming the file if it is unusable."""
        path = path or cls.weights.path
        return cls(load_arrays(path, cls.weights.ranks, cls.weights.format, trainer=cls.weights.trainer),
                   source=str(path))

    @property
    def name(self) -> str:
        return f"{self.weights.label}@{self._version}"

    def predict(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Predictions:
        raise NotImplementedError

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[Classification]:
        predictions = self.predict(texts, embeddings)
        out: list[Classification] = []
        for row in range(len(texts)):
            probabilities = predictions.register_probabilities[row]
            out.append(
                Classification(
                    register=REGISTERS[int(np.argmax(probabilities))],
                    valence=float(predictions.valence[row]),
                    intensity=float(predictions.intensity[row]),
                    register_scores={r: float(p) for r, p in zip(REGISTERS, probabilities, strict=True)},
                )
            )
        return out

    def _affect_width(self, dense: int) -> int:
        """The width of the affect heads' input: the dense block, then the register and emotion28 probabilities."""
        width: int = dense + len(REGISTERS) + self._emotion28_weights.shape[1]
        return width

    def _check(self, dense: int, affect_outputs: int, heads: Shapes) -> None:
        """Raise ConfigurationError unless the shared arrays fit a dense block ``dense`` wide and ``affect_outputs``
        affect targets, and each of the subclass's own ``heads`` has the shape it needs."""
        n_registers = len(REGISTERS)
        n_emotions = self._emotion28_weights.shape[1]
        expected: Shapes = {
            "idf": ((self._hashed_weights.shape[0],), self._idf.shape),
            "hashed_weights": ((self._idf.shape[0], n_registers + affect_outputs), self._hashed_weights.shape),
            "register_dense_weights": ((dense, n_registers), self._register_dense.shape),
            "register_bias": ((n_registers,), self._register_bias.shape),
            "emotion28_weights": ((dense, n_emotions), self._emotion28_weights.shape),
            "emotion28_bias": ((n_emotions,), self._emotion28_bias.shape),
            "affect_dense_weights": ((self._affect_width(dense), affect_outputs), self._affect_dense.shape),
            "affect_bias": ((affect_outputs,), self._affect_bias.shape),
            **heads,
        }
        for name, (want, got) in expected.items():
            if want != got:
                raise ConfigurationError(
                    f"classifier weights at {self._source}: {name} has shape {got}, expected {want}"
                )

    def _affect(self, valence: NDArray[np.float32], arousal_1to5: NDArray[np.float32]
                ) -> NDArray[np.floating[Any]]:
        """How much feeling the words carry, before the exponent: the mean of arousal past its floor and valence
        extremity past its floor, each scaled by the calibration to [0, 1]."""
        arousal_excess = np.clip(
            (arousal_1to5 - self._arousal_floor) / (self._arousal_ceiling - self._arousal_floor), 0.0, 1.0
        )
        extremity = np.clip(
            (np.abs(valence) - self._extremity_floor) / (self._extremity_ceiling - self._extremity_floor), 0.0, 1.0
        )
        affect: NDArray[np.floating[Any]] = 0.5 * (arousal_excess + extremity)
        return affect


class LocalClassifier(TrainedClassifier):
    """Classifies memories from their text and their already-computed embedding. Stateless after loading."""

    weights = WeightsFile(DEFAULT_WEIGHTS_PATH, _ARRAYS, FORMAT, "eval.train_classifier", "feltsense-local")

    def __init__(self, arrays: dict[str, NDArray[np.generic]], *, source: str) -> None:
        super().__init__(arrays, source=source)
        f32 = float32_arrays(arrays)
        self._mlp_hidden_weights = f32("mlp_hidden_weights")
        self._mlp_hidden_bias = f32("mlp_hidden_bias")
        self._mlp_output_weights = f32("mlp_output_weights")
        self._mlp_output_bias = f32("mlp_output_bias")
        self._mlp_target_mean = f32("mlp_target_mean")
        self._mlp_target_scale = f32("mlp_target_scale")
        self._mlp_mix = float(arrays["mlp_mix"])
        self._register_intensity = f32("register_intensity")
        self._check_shapes()
        self._vader = VaderFeatures()

    def _check_shapes(self) -> None:
        n_registers = len(REGISTERS)
        dense = EMBEDDING_DIMENSION + VADER_FEATURES
        affect_in = self._affect_width(dense)
        n_models, _, hidden = self._mlp_hidden_weights.shape
        self._check(dense, 2, {
            "mlp_hidden_weights": ((n_models, affect_in, hidden), self._mlp_hidden_weights.shape),
            "mlp_hidden_bias": ((n_models, hidden), self._mlp_hidden_bias.shape),
            "mlp_output_weights": ((n_models, hidden, 2), self._mlp_output_weights.shape),
            "mlp_output_bias": ((n_models, 2), self._mlp_output_bias.shape),
            "mlp_target_mean": ((2,), self._mlp_target_mean.shape),
            "mlp_target_scale": ((2,), self._mlp_target_scale.shape),
            "register_intensity": ((n_registers,), self._register_intensity.shape),
        })

    @property
    def per_sentence(self) -> bool:
        """A sentence-level model: the write-time pass classifies each sentence and keeps the most intense."""
        return True

    def predict(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> Predictions:
        embeddings = self._validated(texts, embeddings)
        n_registers = len(REGISTERS)
        dense = np.hstack([embeddings, self._vader(texts)])
        hashed = self._hashed_contributions(texts)

        register_probabilities = softmax(
            dense @ self._register_dense + hashed[:, :n_registers] + self._register_bias
        )
        emotion28 = softmax(dense @ self._emotion28_weights + self._emotion28_bias)
        affect_in = np.hstack([dense, register_probabilities, emotion28])
        ridge = affect_in @ self._affect_dense + hashed[:, n_registers:] + self._affect_bias
        hidden = np.maximum(np.einsum("nd,mdh->mnh", affect_in, self._mlp_hidden_weights)
                            + self._mlp_hidden_bias[:, None, :], 0.0)
        mlp = (np.einsum("mnh,mho->mno", hidden, self._mlp_output_weights)
               + self._mlp_output_bias[:, None, :]).mean(axis=0)
        mlp = mlp * self._mlp_target_scale + self._mlp_target_mean
        affect = ((1.0 - self._mlp_mix) * ridge + self._mlp_mix * mlp).astype(np.float32)
        valence_1to5, arousal_1to5 = affect[:, 0], affect[:, 1]

        valence = np.clip(self._valence_stretch * (valence_1to5 - 3.0) / 2.0, -1.0, 1.0)
        intensity = self._intensity(register_probabilities, valence, arousal_1to5)
        return Predictions(
            register_probabilities=register_probabilities,
            valence_1to5=valence_1to5,
            arousal_1to5=arousal_1to5,
            valence=valence.astype(np.float32),
            intensity=intensity.astype(np.float32),
        )

    def _intensity(self, register_probabilities: NDArray[np.float32], valence: NDArray[np.float32],
                   arousal_1to5: NDArray[np.float32]) -> NDArray[np.float32]:
        affect = self._affect(valence, arousal_1to5) ** AFFECT_EXPONENT
        register_weight = register_probabilities @ self._register_intensity
        intensity: NDArray[np.float32] = np.clip(
            1.0 - (1.0 - affect) * (1.0 - register_weight), 0.0, 1.0
        ).astype(np.float32)
        return intensity

    def _validated(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> NDArray[np.float32]:
        return validated_embeddings(texts, embeddings)

    def _hashed_contributions(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The hashed-feature part of every linear head, without building the (n, n_buckets) matrix."""
        n_buckets, n_outputs = self._hashed_weights.shape
        rows: list[NDArray[np.int64]] = []
        buckets: list[NDArray[np.int64]] = []
        values: list[NDArray[np.float32]] = []
        for row, text in enumerate(texts):
            ids, counts = hashed_token_counts(text, n_buckets)
            rows.append(np.full(len(ids), row, dtype=np.int64))
            buckets.append(ids)
            values.append(tfidf_values(counts, self._idf[ids]))
        out = np.zeros((len(texts), n_outputs), dtype=np.float32)
        if not texts or not any(len(ids) for ids in buckets):
            return out
        row_ids, bucket_ids, weights = np.concatenate(rows), np.concatenate(buckets), np.concatenate(values)
        contributions = self._hashed_weights[bucket_ids] * weights[:, None]
        for column in range(n_outputs):
            out[:, column] = np.bincount(row_ids, weights=contributions[:, column], minlength=len(texts))
        return out

