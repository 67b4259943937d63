"""``GET /metrics``: what an operator's Prometheus reads. The counters move as requests arrive, the gauges say what
the store and the queue hold, and no label ever carries a user, a character, an organisation or any words.

The app runs in process over the real embedded store (hashing embedder, keyword classifier)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from api.auth import KeyStore
from engine.jobs import InProcessJobs
from engine.service import Engine
from tests.fakes import hashing_engine_in
from tests.keys import sqlite_key_store

pytestmark = pytest.mark.metrics

SAID = datetime(2025, 3, 2, 18, tzinfo=UTC)
SECRET_WORDS = ("Luna", "luna", "died", "Marguerite")
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: TestClient[Any]) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def turns(user: str, session: str, texts: tuple[str, ...]) -> dict[str, Any]:
    return {"turns": [{"turn_id": f"{user}-{session}-{i}", "session_id": f"{user}-{session}", "character_id": "ava",
                       "user_id": user, "role": "user", "text": text,
                       "timestamp": (SAID + timedelta(minutes=i)).isoformat()} for i, text in enumerate(texts)]}


def recall(client: TestClient[Any], headers: dict[str, str], user: str, message: str) -> dict[str, Any]:
    response = client.post("/v1/recall", headers=headers, json={
        "character_id": "ava", "user_id": user, "message": message, "at": (SAID + timedelta(days=9)).isoformat()})
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[KeyStore]:
    store = sqlite_key_store(tmp_path / "keys.sqlite3")
    yield store
    store.close()


@pytest.fixture
def service(hashing_engine: Engine, keys: KeyStore) -> Iterator[tuple[TestClient[Any], dict[str, str]]]:
    with TestClient(create_app(hashing_engine, keys=keys, transcript_dirs=())) as client:
        yield client, {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}


def test_the_counters_move_as_requests_arrive(service: tuple[TestClient[Any], dict[str, str]]) -> None:
    client, headers = service
    before = scrape(client)
    assert value(before, "feltsense_recall_seconds_count", mode="hybrid") == 0
    assert value(before, "feltsense_store_memories", backend="embedded") == 0
    assert value(before, "feltsense_store_up", backend="embedded") == 1

    said = turns("tester-1", "s1", ("My dog Luna died last week.", "Luna and I walked in the park every morning."))
    assert client.post("/v1/turns", headers=headers, json=said).status_code == 200
    assert client.post("/v1/turns", headers=headers, json=said).status_code == 200  # a retry: duplicates
    closed = client.post("/v1/sessions/tester-1-s1/close", headers=headers,
                         json={"closed_at": (SAID + timedelta(hours=1)).isoformat()})
    assert closed.status_code == 200, closed.text
    answer = recall(client, headers, "tester-1", "I went for a walk in the park")
    told = len(answer["tone_constraints"]) + len(answer["standing_rules"])
    assert told, "the bereavement should carry a tone rule on this turn"

    after = scrape(client)
    assert value(after, "feltsense_turns_ingested_total", outcome="stored") == 2
    assert value(after, "feltsense_turns_ingested_total", outcome="duplicate") == 2
    assert value(after, "feltsense_sessions_closed_total") == 1
    assert value(after, "feltsense_recall_seconds_count", mode="hybrid") == 1
    assert value(after, "feltsense_recall_seconds_sum", mode="hybrid") > 0
    assert value(after, "feltsense_recalls_degraded_total", mode="lexical") == 0
    emitted = (value(after, "feltsense_tone_constraints_total") + value(after, "feltsense_standing_rules_total"))
    assert emitted == told
    # The two turns' memories and the facts the write-time pass distilled from them (the dog's name, its death).
    assert value(after, "feltsense_store_memories", backend="embedded") >= 2
    assert value(after, "feltsense_sessions_pending_traces", backend="embedded") == 0


def test_no_label_carries_a_user_or_content_and_the_series_stay_bounded(
    service: tuple[TestClient[Any], dict[str, str]],
) -> None:
    client, headers = service
    said = turns("user-a", "s1", ("My dog Luna died last week.", "Marguerite is my sister."))
    client.post("/v1/turns", headers=headers, json=said)
    recall(client, headers, "user-a", "Luna")
    first = scrape(client)
    for n in range(20):  # twenty more users, each with a turn and a recall of their own
        client.post("/v1/turns", headers=headers, json=turns(f"user-{n}", "s1", (f"Marguerite said {n} things",)))
        recall(client, headers, f"user-{n}", "what did Marguerite say")
    later = scrape(client)

    assert {key for key in later} == {key for key in first}, "new users must not add series"
    label_names = {name for _, labels in later for name, _ in labels}
    assert label_names <= {"mode", "outcome", "backend", "queue", "le"}
    label_values = {v for _, labels in later for _, v in labels}
    assert not any(word in v for v in label_values for word in (*SECRET_WORDS, "user-", "acme", "ava", "tester"))
    assert value(later, "feltsense_recall_seconds_count", mode="hybrid") == 21


def test_a_degraded_recall_is_counted_by_its_mode(tmp_path: Path, keys: KeyStore) -> None:
    engine = hashing_engine_in(tmp_path / "down", embedder_down=True)
    try:
        with TestClient(create_app(engine, keys=keys, transcript_dirs=())) as client:
            headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
            client.post("/v1/turns", headers=headers, json=turns("u", "s1", ("Luna loved the park",)))
            answer = recall(client, headers, "u", "the park")
            samples = scrape(client)
    finally:
        engine.close()
    mode = answer["trace"]["mode"]
    assert mode != "hybrid"
    assert value(samples, "feltsense_recalls_degraded_total", mode=mode) == 1
    assert value(samples, "feltsense_recall_seconds_count", mode=mode) == 1
    assert value(samples, "feltsense_recall_seconds_count", mode="hybrid") == 0


def test_the_job_queue_depth_is_reported_when_closes_are_queued(hashing_engine: Engine, keys: KeyStore) -> None:
    jobs = InProcessJobs(hashing_engine)
    with TestClient(create_app(hashing_engine, keys=keys, jobs=jobs, transcript_dirs=())) as client:
        headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
        client.post("/v1/turns", headers=headers, json=turns("u", "s1", ("Luna loved the park",)))
        queued = client.post("/v1/sessions/u-s1/close", headers=headers, params={"wait": "true"})
        assert queued.status_code == 200, queued.text
        samples = scrape(client)
    assert value(samples, "feltsense_job_queue_depth", queue="in-process") == 0  # the pass has run
    assert value(samples, "feltsense_sessions_closed_total") == 1


def test_metrics_need_no_key_and_are_left_out_of_the_api_schema(
    service: tuple[TestClient[Any], dict[str, str]],
) -> None:
    client, _ = service
    assert client.get("/metrics").status_code == 200
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]
