"""The close endpoint over a job queue (202 with the job id) and the readiness probe. The Redis variants of both
are in tests/e2e/test_arq_jobs.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.domain.models import TraceStatus
from engine.jobs import InProcessJobs
from engine.service import Engine
from tests.fakes import hashing_engine_in
from tests.keys import sqlite_key_store

TURNS = {"turns": [
    {"turn_id": "t0", "session_id": "s1", "character_id": "ava", "user_id": "u1", "role": "user",
     "text": "My dog Luna died last week.", "timestamp": "2025-03-02T18:00:00Z"},
    {"turn_id": "t1", "session_id": "s1", "character_id": "ava", "user_id": "u1", "role": "user",
     "text": "Luna and I walked in the park every morning.", "timestamp": "2025-03-02T18:01:00Z"},
]}


def bearer(keys: KeyStore) -> dict[str, str]:
    return {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}


def test_with_the_in_process_queue_a_close_is_queued_and_written_in_the_background(
    hashing_engine: Engine, tmp_path: Path
) -> None:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    jobs = InProcessJobs(hashing_engine)
    with TestClient(create_app(hashing_engine, keys=keys, jobs=jobs)) as client:
        client.headers.update(bearer(keys))
        assert client.post("/v1/turns", json=TURNS).status_code == 200
        closed = client.post("/v1/sessions/s1/close", json={"closed_at": "2025-03-02T18:10:00Z"})
        assert closed.status_code == 202
        answered = closed.json()
        assert {k: answered[k] for k in ("session_id", "job_id")} == {"session_id": "s1",
                                                                    "job_id": "write-session:acme:s1"}
        # The close answers at once, with the job where it is then: usually still pending; on a fast pass (the
        # hashing engine, one thread free) already finished, with its report.
        if answered["queued"]:
            assert answered["status"] in ("queued", "running") and answered["report"] is None
        else:
            assert answered["status"] == "complete" and answered["report"]["session_id"] == "s1"
        missing = client.post("/v1/sessions/nope/close")
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/problem+json")
        jobs.join(timeout_s=10)
        done = client.get("/v1/jobs/write-session:acme:s1").json()
        assert done["status"] == "complete" and done["report"]["session_id"] == "s1"
        memories = hashing_engine.store.session_memories("acme:s1")
        traces = hashing_engine.store.get_traces([m.memory_id for m in memories])
        assert [traces[m.memory_id].status for m in memories] == [TraceStatus.COMPLETE] * 2
        assert client.get("/readyz").json() == {
            "status": "ready", "checks": {"store": "ok", "embedder": "ok", "ledger": "ok", "in-process": "ok"}
        }
    keys.close()


def test_the_close_needs_a_runtime_key_when_queued_too(hashing_engine: Engine, tmp_path: Path) -> None:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    with TestClient(create_app(hashing_engine, keys=keys, jobs=InProcessJobs(hashing_engine))) as client:
        assert client.post("/v1/sessions/s1/close").status_code == 401
        director = {"Authorization": f"Bearer {keys.create('acme', 'director')}"}
        assert client.post("/v1/sessions/s1/close", headers=director).status_code == 403
    keys.close()


def test_readiness_needs_no_key_and_checks_the_store_and_the_embedder(
    hashing_engine: Engine, tmp_path: Path
) -> None:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    with TestClient(create_app(hashing_engine, keys=keys)) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "checks": {"store": "ok", "embedder": "ok", "ledger": "ok"}}
    keys.close()


def test_readiness_is_503_with_retry_after_when_the_embedder_is_down(tmp_path: Path) -> None:
    engine = hashing_engine_in(tmp_path / "data", embedder_down=True)
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    try:
        with TestClient(create_app(engine, keys=keys)) as client:
            response = client.get("/readyz")
            assert response.status_code == 503
            assert response.headers["retry-after"] == "5"
            assert response.headers["content-type"].startswith("application/problem+json")
            body: dict[str, Any] = response.json()
            assert body["checks"] == {"store": "ok", "embedder": "unavailable", "ledger": "ok"}
            assert body["detail"] == "unavailable: embedder"
            assert "unreachable" not in response.text  # the cause is logged, not shown to an anonymous probe
    finally:
        engine.close()
        keys.close()
