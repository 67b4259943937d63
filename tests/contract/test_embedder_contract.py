"""The embedder contract: every Embedder passes these. The local ONNX model, the hashing fake, and the Mistral
adapter driving the real SDK against the fake Mistral server."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.mistral import MistralEmbedder
from engine.domain.ports import Embedder
from tests.fake_mistral import FakeMistral

TEXTS = ["My dog Luna died last week.", "We walked in the park every morning.", "I got the job!"]
MISTRAL_BATCH_SIZE = 16


@pytest.fixture(scope="module")
def fake_mistral() -> Iterator[FakeMistral]:
    with FakeMistral() as fake:
        yield fake


@pytest.fixture(params=[pytest.param("onnx", marks=pytest.mark.slow), "hashing", "mistral"])
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    if request.param == "onnx":
        yield request.getfixturevalue("onnx_embedder")
    elif request.param == "hashing":
        yield HashingEmbedder()
    else:
        fake: FakeMistral = request.getfixturevalue("fake_mistral")
        mistral = MistralEmbedder(fake.api_key, server_url=fake.url, dimension=fake.dimension,
                                  batch_size=MISTRAL_BATCH_SIZE, timeout_s=5.0, backoff_base_s=0.001)
        yield mistral
        mistral.close()


def test_it_names_its_vector_space(embedder: Embedder) -> None:
    assert isinstance(embedder.model_id, str) and embedder.model_id
    assert isinstance(embedder.dimension, int) and embedder.dimension > 0


def test_one_unit_length_float32_row_per_text(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), embedder.dimension)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_same_text_gives_the_same_vector(embedder: Embedder) -> None:
    first = embedder.embed(TEXTS)
    again = embedder.embed(tuple(TEXTS))
    np.testing.assert_allclose(first, again, atol=1e-6)
    assert not np.allclose(first[0], first[2])  # and different texts do not


def test_no_texts_give_an_empty_matrix(embedder: Embedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


def test_a_batch_larger_than_the_batch_size_comes_back_whole_and_in_order(embedder: Embedder) -> None:
    texts = [f"memory number {i}: {TEXTS[i % len(TEXTS)]}" for i in range(70)]  # > 64 and > MISTRAL_BATCH_SIZE
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, embedder.dimension)
    for i in (0, 17, 64, 69):
        alone = embedder.embed([texts[i]])[0]
        # Close, not equal: a quantised model's activations depend a little on what shares the batch.
        assert float(alone @ vectors[i]) > 0.99
