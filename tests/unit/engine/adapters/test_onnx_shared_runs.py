"""The local embedder's shared runs: small calls made while a run is under way wait and share the next one.
Recall relies on each call getting its own texts' rows back, in order, and on a failed run failing every call in it
(stage one then answers lexically), never on one call's rows reaching another."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from engine.adapters.onnx_embedder import SHARED_RUN_TEXTS, OnnxEmbedder

pytestmark = pytest.mark.slow


class _Recorded(OnnxEmbedder):
    """The real model, with each run's texts recorded and the first run held until released."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[list[str]] = []
        self.first_run_started = threading.Event()
        self.release_first_run = threading.Event()
        self.fail: Exception | None = None

    def _embed_all(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.runs.append(list(texts))
        if len(self.runs) == 1:
            self.first_run_started.set()
            assert self.release_first_run.wait(10)
        if self.fail is not None and len(self.runs) > 1:
            raise self.fail
        return super()._embed_all(texts)


def _calls_during_a_run(embedder: _Recorded, calls: list[list[str]]) -> list[NDArray[np.float32] | Exception]:
    """Start one call and hold its run; make ``calls`` while it runs; release it; each call's rows or error."""
    results: list[NDArray[np.float32] | Exception] = [np.zeros(0, dtype=np.float32)] * len(calls)

    def call(i: int, texts: list[str]) -> None:
        try:
            results[i] = embedder.embed(texts)
        except Exception as exc:  # the run's error, as this call sees it
            results[i] = exc

    first = threading.Thread(target=embedder.embed, args=(["the call that runs first"],))
    first.start()
    assert embedder.first_run_started.wait(10)
    threads = [threading.Thread(target=call, args=(i, texts)) for i, texts in enumerate(calls)]
    for thread in threads:
        thread.start()
    while sum(1 for _ in embedder._waiting) < len(calls):  # every call is waiting for the run under way
        threading.Event().wait(0.01)
    embedder.release_first_run.set()
    for thread in [first, *threads]:
        thread.join(10)
    return results


def test_calls_made_during_a_run_share_the_next_and_each_gets_its_own_rows() -> None:
    embedder = _Recorded()
    calls = [["My dog Luna died last week."], ["We walked in the park.", "I got the job!"], ["Sam called again."]]
    results = _calls_during_a_run(embedder, calls)
    assert len(embedder.runs) == 2  # the held run, then one run for all three waiting calls
    assert sorted(embedder.runs[1]) == sorted(text for texts in calls for text in texts)
    alone = OnnxEmbedder()
    for texts, rows in zip(calls, results, strict=True):
        assert isinstance(rows, np.ndarray) and rows.shape == (len(texts), alone.dimension)
        for text, row in zip(texts, rows, strict=True):
            assert float(alone.embed([text])[0] @ row) > 0.999


def test_a_failed_shared_run_fails_every_call_in_it_and_the_next_call_runs_again() -> None:
    embedder = _Recorded()
    embedder.fail = RuntimeError("onnxruntime failed")
    results = _calls_during_a_run(embedder, [["one"], ["two"]])
    assert all(isinstance(r, RuntimeError) and str(r) == "onnxruntime failed" for r in results)
    embedder.fail = None
    assert embedder.embed(["after the failure"]).shape == (1, embedder.dimension)


def test_a_call_larger_than_a_shared_run_runs_on_its_own() -> None:
    embedder = _Recorded()
    embedder.release_first_run.set()
    texts = [f"line {i}" for i in range(SHARED_RUN_TEXTS + 1)]
    assert embedder.embed(texts).shape == (len(texts), embedder.dimension)
    assert embedder.runs == [texts]
