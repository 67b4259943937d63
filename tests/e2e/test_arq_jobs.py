"""The write-time jobs through arq, against a real redis-server, with the worker run in burst mode.

A close enqueues one job per session (the id is derived from it), the worker runs the pass, a failing classifier
is retried with backoff and then left pending (nothing lost), the nightly job backfills and retries, and the HTTP
close answers 202 with the job id.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from arq.constants import default_queue_name, result_key_prefix
from arq.jobs import Job
from arq.worker import Worker
from litestar.testing import TestClient
from numpy.typing import NDArray

from api.app import create_app
from api.jobs import WRITE_RESULT_KEPT_S, ArqJobs
from api.worker import NIGHTLY_MAINTENANCE, WRITE_MAX_TRIES, WorkerSettings
from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.hashing_embedder import HashingEmbedder
from engine.adapters.sqlite_ledger import SqliteLedger
from engine.domain.errors import BackendUnavailable
from engine.domain.models import CloseReport, TraceStatus
from engine.service import Engine
from tests.arq_worker import burst
from tests.fakes import FakeClassification, KeywordClassifier
from tests.keys import sqlite_key_store
from tests.servers import redis as redis_servers
from tests.servers.redis import RedisServer
from tests.sessions import CLOSED_AT, LUNA, T0, turns

pytestmark = [
    pytest.mark.redis,
    # arq's Worker.close() calls redis-py's deprecated close(); the worker code here is arq's, not ours.
    pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning"),
]



class SwitchableClassifier(KeywordClassifier):
    """The keyword classifier, failing like a provider outage while ``broken``."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[FakeClassification]:
        if self.broken:
            raise ConnectionError("classifier unreachable")
        return super().classify(texts, embeddings)


class SwitchableEmbedder(HashingEmbedder):
    """The hashing embedder, failing while ``down``."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if self.down:
            raise ConnectionError("embedder unreachable")
        return super().embed(texts)


class Providers:
    def __init__(self, tmp_path: Path) -> None:
        self.classifier = SwitchableClassifier()
        self.embedder = SwitchableEmbedder()
        store = EmbeddedStore(tmp_path / "data", embedding_model=self.embedder.model_id,
                              dimension=self.embedder.dimension)
        self.engine = Engine(ledger=SqliteLedger.in_memory(),
                             store=store, embedder=self.embedder, classifier=self.classifier)

    def traces(self, session: str) -> list[tuple[TraceStatus, int]]:
        memories = self.engine.store.session_memories(session)
        found = self.engine.store.get_traces([m.memory_id for m in memories])
        return [(found[m.memory_id].status, found[m.memory_id].attempts) for m in memories if m.memory_id in found]


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def providers(tmp_path: Path) -> Any:
    made = Providers(tmp_path)
    yield made
    made.engine.close()


def counts(worker: Worker) -> tuple[int, int, int]:
    return worker.jobs_complete, worker.jobs_retried, worker.jobs_failed


async def run_nightly(jobs: ArqJobs, redis_url: str, engine: Engine) -> Any:
    """Enqueue the nightly job, run the worker until it has finished it (once, with no retry) and return its result."""
    await jobs.pool.enqueue_job(NIGHTLY_MAINTENANCE, _job_id="nightly-test")
    worker = await burst(redis_url, engine)
    assert counts(worker) == (1, 0, 0)
    nightly = await Job("nightly-test", jobs.pool).result_info()
    assert nightly is not None
    return nightly.result


def test_a_repeated_close_enqueues_one_job_and_the_worker_writes_the_traces(
    redis_url: str, providers: Providers
) -> None:
    providers.engine.ingest(turns("s1"))

    async def scenario() -> None:
        async with ArqJobs(redis_url) as jobs:
            ids = [await jobs.enqueue_write("s1", CLOSED_AT) for _ in range(2)]
            assert ids == ["write-session:s1", "write-session:s1"]
            queued = await jobs.pool.queued_jobs()
            assert [(j.job_id, j.function, j.args) for j in queued] == [
                ("write-session:s1", "write_session", ("s1", CLOSED_AT.isoformat()))
            ]

            worker = await burst(redis_url, providers.engine)
            assert counts(worker) == (1, 0, 0)
            assert providers.classifier.calls == 1
            assert providers.traces("s1") == [(TraceStatus.COMPLETE, 1), (TraceStatus.COMPLETE, 1)]
            info = await Job("write-session:s1", jobs.pool).result_info()
            assert info is not None and info.success
            assert info.result == CloseReport(session_id="s1", traces_written=2, traces_pending=0).model_dump()

            # arq refuses an id whose result is still kept: a close just after the pass enqueues nothing new ...
            kept_ms = await jobs.pool.pttl(result_key_prefix + "write-session:s1")
            assert 0 < kept_ms <= WRITE_RESULT_KEPT_S * 1000
            assert await jobs.enqueue_write("s1", CLOSED_AT) == "write-session:s1"
            assert await jobs.pool.queued_jobs() == []
            # ... and once the result has expired (deleted here rather than waited for), a close runs it again.
            await jobs.pool.delete(result_key_prefix + "write-session:s1")
            await jobs.enqueue_write("s1", CLOSED_AT)
            assert [j.job_id for j in await jobs.pool.queued_jobs()] == ["write-session:s1"]

    asyncio.run(scenario())


def test_a_failing_classifier_is_retried_then_left_pending_and_the_nightly_job_finishes_it(
    redis_url: str, providers: Providers
) -> None:
    providers.engine.ingest(turns("s1"))
    providers.classifier.broken = True

    async def scenario() -> None:
        async with ArqJobs(redis_url) as jobs:
            await jobs.enqueue_write("s1", CLOSED_AT)
            worker = await burst(redis_url, providers.engine)
            # Tried WRITE_MAX_TRIES times (retried with backoff in between), then finished with the traces pending.
            assert counts(worker) == (1, WRITE_MAX_TRIES - 1, 0)
            info = await Job("write-session:s1", jobs.pool).result_info()
            assert info is not None and info.success and info.job_try == WRITE_MAX_TRIES
            assert info.result == {"session_id": "s1", "traces_written": 0, "traces_pending": 2}
            assert providers.traces("s1") == [(TraceStatus.PENDING, WRITE_MAX_TRIES)] * 2  # kept, nothing lost

            providers.classifier.broken = False
            assert await run_nightly(jobs, redis_url, providers.engine) == {
                "vectors": 0, "traces": 2, "usage": 0, "archived": 0, "proposed": 0, "repaired": 0}
            assert [status for status, _ in providers.traces("s1")] == [TraceStatus.COMPLETE] * 2

    asyncio.run(scenario())


def test_the_nightly_job_backfills_vectors_stored_while_the_embedder_was_down(
    redis_url: str, providers: Providers
) -> None:
    providers.embedder.down = True
    assert providers.engine.ingest(turns("s1")).awaiting_embedding == 2
    providers.embedder.down = False

    async def scenario() -> None:
        async with ArqJobs(redis_url) as jobs:
            assert await run_nightly(jobs, redis_url, providers.engine) == {
                "vectors": 2, "traces": 0, "usage": 0, "archived": 0, "proposed": 0, "repaired": 0}
            assert providers.engine.store.unembedded(10) == []

    asyncio.run(scenario())


def test_the_nightly_job_is_scheduled_at_three_utc() -> None:
    assert WorkerSettings.cron_jobs is not None
    (registered,) = WorkerSettings.cron_jobs
    assert registered.name == NIGHTLY_MAINTENANCE and WorkerSettings.timezone is UTC
    # A copy: arq keeps the schedule on the CronJob itself, and a past next_run would make every later worker in
    # this process enqueue the job on each heartbeat.
    nightly = dataclasses.replace(registered)
    nightly.calculate_next(datetime(2025, 3, 2, 12, 30, tzinfo=UTC))
    assert nightly.next_run is not None
    assert nightly.next_run.replace(microsecond=0) == datetime(2025, 3, 3, 3, 0, tzinfo=UTC)


class StoreDownFor:
    """The engine, with its store unreachable for the first ``failures`` closes."""

    def __init__(self, engine: Engine, failures: int) -> None:
        self.engine = engine
        self.failures = failures

    def close_session(self, session_id: str, *, closed_at: datetime) -> CloseReport:
        if self.failures:
            self.failures -= 1
            raise BackendUnavailable("store unreachable", backend="store", retry_after_s=0)
        return self.engine.close_session(session_id, closed_at=closed_at)


def test_an_unavailable_backend_is_retried_and_fails_the_job_after_the_last_try(
    redis_url: str, providers: Providers
) -> None:
    providers.engine.ingest(turns("s1"))
    providers.engine.ingest(turns("s2"))

    async def scenario() -> None:
        async with ArqJobs(redis_url) as jobs:
            await jobs.enqueue_write("s1", CLOSED_AT)
            worker = await burst(redis_url, StoreDownFor(providers.engine, failures=1))
            assert counts(worker) == (1, 1, 0)
            assert [status for status, _ in providers.traces("s1")] == [TraceStatus.COMPLETE] * 2

            await jobs.enqueue_write("s2", CLOSED_AT)
            worker = await burst(redis_url, StoreDownFor(providers.engine, failures=100))
            assert counts(worker) == (0, WRITE_MAX_TRIES, 1)
            info = await Job("write-session:s2", jobs.pool).result_info()
            assert info is not None and not info.success
            assert f"max {WRITE_MAX_TRIES} retries exceeded" in str(info.result)

    asyncio.run(scenario())


def test_the_http_close_answers_202_with_the_derived_job_id(
    redis_url: str, redis_server: RedisServer, providers: Providers, tmp_path: Path
) -> None:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
    batch = {"turns": [
        {"turn_id": f"t{i}", "session_id": "s1", "character_id": "ava", "user_id": "u1", "role": role, "text": text,
         "timestamp": (T0 + timedelta(seconds=30 * i)).isoformat()}
        for i, (role, text) in enumerate(LUNA)
    ]}
    with TestClient(create_app(providers.engine, keys=keys, jobs=ArqJobs(redis_url))) as client:
        client.headers.update(headers)
        assert client.post("/v1/turns", json=batch).status_code == 200
        for _ in range(2):
            closed = client.post("/v1/sessions/s1/close", json={"closed_at": CLOSED_AT.isoformat()})
            assert closed.status_code == 202, closed.text
            assert closed.json() == {"session_id": "s1", "job_id": "write-session:acme:s1", "queued": True,
                                     "status": "queued", "report": None, "traces_pending": None}
        assert client.post("/v1/sessions/nope/close").status_code == 404
        assert client.get("/v1/jobs/write-session:acme:s1").json()["status"] == "queued"

        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready",
                                "checks": {"store": "ok", "embedder": "ok", "ledger": "ok", "redis": "ok"}}

    with redis_server.client() as raw:
        assert raw.zrange(default_queue_name, 0, -1) == [b"write-session:acme:s1"]
    assert asyncio.run(burst(redis_url, providers.engine)).jobs_complete == 1
    assert [status for status, _ in providers.traces("acme:s1")] == [TraceStatus.COMPLETE] * 2
    with TestClient(create_app(providers.engine, keys=keys, jobs=ArqJobs(redis_url))) as client:
        done = client.get("/v1/jobs/write-session:acme:s1", headers=headers).json()
        assert done["status"] == "complete" and done["report"]["traces_written"] == 2
        assert done["report"]["session_id"] == "s1"
    keys.close()


def test_readiness_is_503_with_retry_after_when_redis_is_gone(providers: Providers, tmp_path: Path) -> None:
    # A throwaway server of its own, so stopping it leaves the session's server alone.
    server = redis_servers.start(redis_servers.ensure(log=lambda line: None))
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    try:
        with TestClient(create_app(providers.engine, keys=keys, jobs=ArqJobs(server.url))) as client:
            assert client.get("/readyz").status_code == 200
            server.stop()
            gone = client.get("/readyz")
            assert gone.status_code == 503
            assert gone.headers["retry-after"] == "5"
            assert gone.headers["content-type"].startswith("application/problem+json")
            assert gone.json()["checks"] == {"store": "ok", "embedder": "ok", "ledger": "ok", "redis": "unavailable"}
    finally:
        server.stop()
        keys.close()


def test_a_waited_close_after_a_recent_pass_never_reports_new_turns_as_written(
    redis_url: str, providers: Providers, tmp_path: Path
) -> None:
    # arq keeps a finished job's id for WRITE_RESULT_KEPT_S and refuses a job with it: a second close soon after
    # the first queues nothing, and the finished job's old report must not pass for the new turns'.
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}

    def batch(first: int, texts: list[tuple[str, str]]) -> dict[str, Any]:
        return {"turns": [{"turn_id": f"t{first + i}", "session_id": "s1", "character_id": "ava", "user_id": "u1",
                           "role": role, "text": text,
                           "timestamp": (T0 + timedelta(seconds=30 * (first + i))).isoformat()}
                          for i, (role, text) in enumerate(texts)]}

    with TestClient(create_app(providers.engine, keys=keys, jobs=ArqJobs(redis_url))) as client:
        client.headers.update(headers)
        assert client.post("/v1/turns", json=batch(0, LUNA)).status_code == 200
        assert client.post("/v1/sessions/s1/close").status_code == 202
    assert asyncio.run(burst(redis_url, providers.engine)).jobs_complete == 1
    with TestClient(create_app(providers.engine, keys=keys, jobs=ArqJobs(redis_url))) as client:
        client.headers.update(headers)
        assert client.post("/v1/turns", json=batch(10, [("user", "One more thing about Luna.")])).status_code == 200
        waited = client.post("/v1/sessions/s1/close", params={"wait": "true", "timeout_s": "1"})
        assert waited.status_code == 202, waited.text
        assert waited.json()["traces_pending"] == 1
    keys.close()
