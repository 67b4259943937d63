"""The classifier contract: every Classifier passes these. The local trained classifier, the keyword fake, and
the Mistral adapter driving the real SDK against the fake Mistral server."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.mistral import MistralClassifier
from engine.domain.models import REGISTERS
from engine.domain.ports import Classifier
from tests.fake_mistral import FakeMistral
from tests.fakes import KeywordClassifier

GRIEF = "My dog Luna died last week and I can't stop crying."
JOY = "I got the job! I'm so happy, this is amazing, great news!"
SMALL_TALK = "I had a sandwich for lunch."


@dataclass
class Case:
    classifier: Classifier
    embed: Callable[[Sequence[str]], NDArray[np.float32]]

    def classify(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        return self.classifier.classify(texts, self.embed(texts))


@pytest.fixture(scope="module")
def fake_mistral() -> Iterator[FakeMistral]:
    with FakeMistral() as fake:
        yield fake


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.slow), pytest.param("local-v1", marks=pytest.mark.slow),
                        "keyword", "mistral"])
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    if request.param == "local":
        from traces.session_classifier import SessionClassifier

        yield Case(SessionClassifier.load(), request.getfixturevalue("onnx_embedder").embed)
    elif request.param == "local-v1":
        from traces.classifier import LocalClassifier

        yield Case(LocalClassifier.load(), request.getfixturevalue("onnx_embedder").embed)
    elif request.param == "keyword":
        yield Case(KeywordClassifier(), HashingEmbedder().embed)
    else:
        fake: FakeMistral = request.getfixturevalue("fake_mistral")
        mistral = MistralClassifier(fake.api_key, server_url=fake.url, model=fake.chat_model, timeout_s=5.0,
                                    backoff_base_s=0.001)
        yield Case(mistral, HashingEmbedder().embed)
        mistral.close()


def test_it_says_what_it_is(case: Case) -> None:
    assert isinstance(case.classifier.name, str) and case.classifier.name
    assert isinstance(case.classifier.per_sentence, bool)


def test_one_classification_per_text_within_the_scales(case: Case) -> None:
    results = case.classify([GRIEF, JOY, SMALL_TALK])
    assert len(results) == 3
    for result in results:
        assert result.register in REGISTERS
        assert -1.0 <= result.valence <= 1.0
        assert 0.0 <= result.intensity <= 1.0
        assert isinstance(result.anchors, tuple) and all(isinstance(a, str) for a in result.anchors)
        assert isinstance(result.facts, tuple) and all(isinstance(f, str) for f in result.facts)


def test_results_come_back_in_the_order_of_the_texts(case: Case) -> None:
    grief, joy = case.classify([GRIEF, JOY])
    assert grief.valence < 0 < joy.valence
    joy_first, grief_second = case.classify([JOY, GRIEF])
    assert grief_second.valence < 0 < joy_first.valence


def test_no_texts_give_no_results(case: Case) -> None:
    assert len(case.classify([])) == 0
