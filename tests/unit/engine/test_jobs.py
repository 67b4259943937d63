"""The in-process job queue: a closed session's write-time pass runs once, on a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import BackendUnavailable
from engine.domain.models import TraceStatus
from engine.jobs import InProcessJobs, write_job_id
from engine.service import Engine
from tests.fakes import BrokenClassifier, FakeClassification, KeywordClassifier
from tests.sessions import CLOSED_AT, turns


class GatedClassifier(KeywordClassifier):
    """Holds every classification until the test opens the gate, so a second close can arrive mid-pass."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[FakeClassification]:
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        return super().classify(texts, embeddings)


def make_engine(tmp_path: Path, classifier: object) -> Engine:
    embedder = HashingEmbedder()
    store = EmbeddedStore(tmp_path / "data", embedding_model=embedder.model_id, dimension=embedder.dimension)
    return Engine(ledger=SqliteLedger.in_memory(), store=store, embedder=embedder, classifier=classifier)  # type: ignore[arg-type]


@contextlib.contextmanager
def queue_after(tmp_path: Path, classifier: object, session: str) -> Iterator[tuple[Engine, InProcessJobs]]:
    """An engine that has ingested ``session``, and its in-process queue; both closed afterwards."""
    engine = make_engine(tmp_path, classifier)
    engine.ingest(turns(session))
    jobs = InProcessJobs(engine)
    try:
        yield engine, jobs
    finally:
        jobs.close()
        engine.close()


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[Engine, GatedClassifier]]:
    classifier = GatedClassifier()
    engine = make_engine(tmp_path, classifier)
    yield engine, classifier
    classifier.gate.set()
    engine.close()


def trace_statuses(engine: Engine, session: str) -> list[TraceStatus]:
    memories = engine.store.session_memories(session)
    traces = engine.store.get_traces([m.memory_id for m in memories])
    return [traces[m.memory_id].status for m in memories if m.memory_id in traces]


def test_a_sessions_job_id_is_shared_by_its_closes_and_carries_its_organisations_prefix() -> None:
    # A repeated close shares its job (the queue refuses a second job with the id); another session never does. The
    # API answers a job id only to the organisation whose prefix it starts with (api.app.job_status), so an
    # organisation whose name extends another's ("acme2", "acme") must not match it.
    assert write_job_id("acme:s1") == write_job_id("acme:s1") != write_job_id("acme:s2")
    assert write_job_id("acme:s1").startswith(write_job_id("acme:"))
    assert not write_job_id("acme2:s1").startswith(write_job_id("acme:"))


def test_a_close_while_the_pass_is_pending_adds_nothing(gated: tuple[Engine, GatedClassifier]) -> None:
    engine, classifier = gated
    engine.ingest(turns("s1"))
    jobs = InProcessJobs(engine)
    try:
        first = jobs.submit("s1", CLOSED_AT)
        assert classifier.entered.wait(10)  # running now
        second = asyncio.run(jobs.enqueue_write("s1", CLOSED_AT))
        assert first == second == "write-session:s1"
        assert jobs.pending() == {"s1"}
        assert trace_statuses(engine, "s1") == []  # the request was answered before the pass wrote anything

        classifier.gate.set()
        jobs.join(timeout_s=10)
        assert jobs.pending() == set()
        assert classifier.calls == 1  # one pass, not two
        assert trace_statuses(engine, "s1") == [TraceStatus.COMPLETE, TraceStatus.COMPLETE]
        assert engine.store.closed_sessions(["s1"]) == {"s1"}

        # Once the pass has finished, a new close queues it again (and the pass finds nothing left to write).
        jobs.submit("s1", CLOSED_AT)
        jobs.join(timeout_s=10)
        assert trace_statuses(engine, "s1") == [TraceStatus.COMPLETE, TraceStatus.COMPLETE]
    finally:
        classifier.gate.set()
        jobs.close()


def test_a_failing_classifier_leaves_the_traces_pending(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with queue_after(tmp_path, BrokenClassifier(), "s1") as (engine, jobs):
        with caplog.at_level(logging.WARNING, logger="feltsense.jobs"):
            jobs.submit("s1", CLOSED_AT)
            jobs.join(timeout_s=10)
        assert trace_statuses(engine, "s1") == [TraceStatus.PENDING, TraceStatus.PENDING]
        assert engine.store.pending_sessions() == ["s1"]  # what the background pass retries
        assert "left 2 traces pending" in caplog.text


def test_a_failed_pass_does_not_stop_the_queue(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with queue_after(tmp_path, KeywordClassifier(), "s2") as (engine, jobs):
        with caplog.at_level(logging.ERROR, logger="feltsense.jobs"):
            jobs.submit("unknown", CLOSED_AT)  # NotFound in the pass: logged, nothing to answer
            jobs.submit("s2", CLOSED_AT)
            jobs.join(timeout_s=10)
        assert "write-time pass for session unknown failed" in caplog.text
        assert trace_statuses(engine, "s2") == [TraceStatus.COMPLETE, TraceStatus.COMPLETE]


def test_shutting_down_waits_for_queued_passes_then_refuses_more(gated: tuple[Engine, GatedClassifier]) -> None:
    engine, classifier = gated
    engine.ingest(turns("s1"))
    jobs = InProcessJobs(engine)

    async def lifetime() -> None:
        async with jobs:
            await jobs.enqueue_write("s1", CLOSED_AT)
            await jobs.ping()
            assert await asyncio.to_thread(classifier.entered.wait, 10)
            classifier.gate.set()
        # Leaving the block waited for the pass: its traces are written before the engine could close.
        assert trace_statuses(engine, "s1") == [TraceStatus.COMPLETE, TraceStatus.COMPLETE]
        with pytest.raises(BackendUnavailable):
            await jobs.ping()
        with pytest.raises(BackendUnavailable):
            await jobs.enqueue_write("s1", CLOSED_AT)

    asyncio.run(lifetime())
