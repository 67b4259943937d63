"""The shipped write-time classifier: its weights load, it reads the product's key sentences right, it is fast,
and (with the data present) its held-out scores are the ones its report claims."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from engine.domain.errors import ConfigurationError
from engine.domain.models import REGISTERS
from traces.classifier import DEFAULT_WEIGHTS_PATH, EMBEDDING_DIMENSION, LocalClassifier

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
REPORT_PATH = DEFAULT_WEIGHTS_PATH.parent / "classifier_report.json"

Embed = Callable[[Sequence[str]], NDArray[np.float32]]


@pytest.fixture(scope="module")
def classifier() -> LocalClassifier:
    return LocalClassifier.load()


def unit_vectors(n: int, seed: int = 0) -> NDArray[np.float32]:
    vectors = np.random.default_rng(seed).normal(size=(n, EMBEDDING_DIMENSION)).astype(np.float32)
    normalised: NDArray[np.float32] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalised


def test_shipped_weights_load_without_pickle(classifier: LocalClassifier) -> None:
    assert classifier.name.startswith("feltsense-local@")
    assert DEFAULT_WEIGHTS_PATH.stat().st_size < 5_000_000
    with np.load(DEFAULT_WEIGHTS_PATH, allow_pickle=False) as archive:
        assert tuple(archive["registers"]) == REGISTERS
        assert f"feltsense-local@{archive['version']}" == classifier.name


def test_outputs_are_in_range_and_scores_are_probabilities(classifier: LocalClassifier) -> None:
    texts = ["hello there", "I am furious!!!", "", "so sad today"]
    results = classifier.classify(texts, unit_vectors(len(texts)))
    assert len(results) == len(texts)
    for result in results:
        assert result.register in REGISTERS
        assert -1.0 <= result.valence <= 1.0
        assert 0.0 <= result.intensity <= 1.0
        assert list(result.register_scores) == list(REGISTERS)
        assert sum(result.register_scores.values()) == pytest.approx(1.0, abs=1e-5)
        assert result.register == max(result.register_scores, key=lambda r: result.register_scores[r])


def test_empty_batch(classifier: LocalClassifier) -> None:
    assert classifier.classify([], np.zeros((0, EMBEDDING_DIMENSION), dtype=np.float32)) == []


@pytest.mark.parametrize(
    ("texts", "embeddings", "message"),
    [
        (["a", "b"], unit_vectors(3), "2 texts but 3 embedding rows"),
        (["a"], unit_vectors(1)[:, :100], "100 columns, expected 384"),
        (["a"], unit_vectors(1)[0], "2-dimensional"),
        ("a", unit_vectors(1), "not a single string"),
    ],
)
def test_classify_rejects_mismatched_shapes(
    classifier: LocalClassifier, texts: list[str], embeddings: NDArray[np.float32], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        classifier.classify(texts, embeddings)


def test_a_batch_of_ten_is_fast(classifier: LocalClassifier) -> None:
    texts = [f"My dog died last week and I keep thinking about walk number {i}." for i in range(10)]
    vectors = unit_vectors(10)
    classifier.classify(texts, vectors)
    best = min(_timed(lambda: classifier.classify(texts, vectors)) for _ in range(20))
    assert best < 0.005


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def test_missing_weights_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        LocalClassifier.load(tmp_path / "absent.npz")


def test_corrupt_weights_are_a_configuration_error(tmp_path: Path) -> None:
    garbage = tmp_path / "classifier.npz"
    garbage.write_bytes(b"not a zip archive")
    with pytest.raises(ConfigurationError, match="unreadable"):
        LocalClassifier.load(garbage)


def test_incomplete_weights_name_the_missing_array(tmp_path: Path) -> None:
    with np.load(DEFAULT_WEIGHTS_PATH, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files if name != "idf"}
    partial = tmp_path / "classifier.npz"
    np.savez(partial, **arrays)
    with pytest.raises(ConfigurationError, match="'idf'"):
        LocalClassifier.load(partial)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["my dog died last week", "My dog Luna died last week."])
def test_bereavement_reads_as_intense_grief(classifier: LocalClassifier, embed: Embed, text: str) -> None:
    [result] = classifier.classify([text], embed([text]))
    assert result.register in ("grief", "sadness")
    assert result.valence < 0.0
    assert result.intensity >= 0.6


@pytest.mark.slow
def test_joy_reads_as_positive(classifier: LocalClassifier, embed: Embed) -> None:
    text = "I got the job!!! I'm so happy, I can't stop smiling."
    [result] = classifier.classify([text], embed([text]))
    assert result.valence > 0.3
    assert result.register == "joy"


@pytest.mark.slow
@pytest.mark.parametrize("text", ["I live in Leeds.", "what's the weather like", "I take my coffee black"])
def test_small_talk_reads_as_low_intensity(classifier: LocalClassifier, embed: Embed, text: str) -> None:
    [result] = classifier.classify([text], embed([text]))
    assert result.intensity <= 0.3


@pytest.mark.slow
@pytest.mark.data
def test_held_out_scores_match_the_report(classifier: LocalClassifier) -> None:
    if not (DATA_DIR / "goemotions").is_dir() or not (DATA_DIR / "emobank").is_dir():
        pytest.skip(f"../shared/data not found at {DATA_DIR}: the held-out check needs GoEmotions and EmoBank")
    from eval.train_classifier import FeatureBuilder, pearson, predict, read_emobank, read_goemotions, register_scores

    report = json.loads(REPORT_PATH.read_text(encoding="utf-8"))
    assert report["classifier"] == classifier.name, "the report describes other weights than the shipped ones"
    builder = FeatureBuilder(REPO_ROOT / ".cache" / "classifier")
    scores = register_scores(classifier, read_goemotions(DATA_DIR, "test", builder))
    emobank_test = read_emobank(DATA_DIR, builder, splits=("test",))["test"]
    valence_r = pearson(predict(classifier, emobank_test.features).valence, emobank_test.valence)
    assert scores["macro_f1"] == pytest.approx(report["register_test"]["macro_f1"], abs=0.01)
    assert valence_r == pytest.approx(report["valence_test"]["pearson_r"], abs=0.01)
