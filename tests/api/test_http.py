"""The HTTP service as a character runtime uses it: turns in, session closed, recall out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from engine.service import Engine
from tests.fakes import hashing_engine_in
from tests.keys import sqlite_key_store


def turn(i: int, role: str, text: str, *, session: str = "s1", at: str = "2025-03-02T18:00:00Z") -> dict[str, Any]:
    return {"turn_id": f"{session}-{i}", "session_id": session, "character_id": "ava", "user_id": "tester-1",
            "role": role, "text": text, "timestamp": at}


@pytest.fixture
def client(hashing_engine: Engine, tmp_path: Path) -> Iterator[TestClient[Any]]:
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
    with TestClient(create_app(hashing_engine, keys=keys)) as c:
        c.headers.update(headers)
        yield c


def test_turns_close_and_recall_round_trip(client: TestClient[Any]) -> None:
    batch = {"turns": [turn(0, "user", "My dog Luna died last week."),
                       turn(1, "character", "I'm so sorry.", at="2025-03-02T18:00:30Z"),
                       turn(2, "user", "Luna and I walked in the park every morning.", at="2025-03-02T18:01:00Z")]}
    first = client.post("/v1/turns", json=batch)
    assert first.status_code == 200
    assert first.json() == {"stored": 3, "duplicates": 0, "memories": 2, "awaiting_embedding": 0}
    assert client.post("/v1/turns", json=batch).json()["duplicates"] == 3

    closed = client.post("/v1/sessions/s1/close", json={"closed_at": "2025-03-02T18:10:00Z"})
    assert closed.status_code == 200 and closed.json()["traces_written"] == 2

    result = client.post("/v1/recall?detail=full", json={"character_id": "ava", "user_id": "tester-1",
                                                         "message": "I went for a walk in the park.",
                                                         "session_id": "s2", "at": "2025-03-11T09:00:00Z"})
    assert result.status_code == 200
    body = result.json()
    assert any("Luna" in m["text"] for m in body["memories"])
    assert {"relevance", "salience", "anchor_boost", "score"} <= set(body["memories"][0]["components"])
    assert any(c["register"] == "grief" and "Luna" in c["anchors"] for c in body["tone_constraints"])
    assert body["context"]["system"] and body["context"]["tail"]
    assert body["trace"]["mode"] == "hybrid"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"turns": [turn(0, "narrator", "hi")]}, "turns.0.role"),
        ({"turns": [{**turn(0, "user", "hi"), "timestamp": "2025-03-02T18:00:00"}]}, "turns.0.timestamp"),
        ({"turns": [{**turn(0, "user", "hi"), "mood": "happy"}]}, "turns.0.mood"),
        ({"turns": [{**turn(0, "user", "")}]}, "turns.0.text"),
        ({"turns": []}, "turns"),
    ],
)
def test_bad_turns_get_422_problem_details_naming_the_field(
    client: TestClient[Any], payload: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/turns", json=payload)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == 422 and field in body["detail"]
    assert field in [e["field"] for e in body["errors"]]


def test_bad_recall_is_422_and_unknown_session_close_is_404(client: TestClient[Any]) -> None:
    response = client.post("/v1/recall", json={"character_id": "ava", "user_id": "u", "message": "hi",
                                               "limit": 0})
    assert response.status_code == 422 and "limit" in response.json()["detail"]
    missing = client.post("/v1/sessions/nope/close")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")


def test_the_access_log_says_which_mode_answered(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = hashing_engine_in(tmp_path, embedder_down=True)
    keys = sqlite_key_store(tmp_path / "keys.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme', 'runtime')}"}
    with TestClient(create_app(engine, keys=keys)) as c, caplog.at_level("INFO", logger="feltsense.access"):
        c.headers.update(headers)
        accepted = c.post("/v1/turns", json={"turns": [turn(0, "user", "Luna loved the park.")]})
        assert accepted.status_code == 200 and accepted.json()["awaiting_embedding"] == 1
        body = c.post("/v1/recall", json={"character_id": "ava", "user_id": "tester-1", "message": "the park",
                                          "at": "2025-03-03T00:00:00Z"}).json()
    assert body["trace"]["mode"] == "lexical" and body["memories"]
    assert any("mode=lexical" in r.getMessage() for r in caplog.records if r.name == "feltsense.access")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/memories/m_0123456789abcdef0123"), ("DELETE", "/v1/memories/m_0123456789abcdef0123"),
    ("GET", "/v1/recalls/r_0123456789abcdef0123"), ("GET", "/v1/memories"),
])
def test_a_missing_query_parameter_is_a_422_naming_it_and_where(
    client: TestClient[Any], method: str, path: str
) -> None:
    for query, missing in (("", ("character_id", "user_id")), ("?character_id=ava", ("user_id",))):
        response = client.request(method, path + query)
        assert response.status_code == 422, response.text
        body = response.json()
        [error] = body["errors"]  # Litestar stops at the first missing one
        assert error["field"] in missing and error["location"] == "query"
        assert error["message"] == f"the query parameter '{error['field']}' is required"
        assert error["field"] in body["detail"] and "body" not in body["detail"]


def test_a_bad_query_value_is_named_as_a_query_parameter(client: TestClient[Any]) -> None:
    response = client.get("/v1/memories?character_id=ava&user_id=u1&limit=lots")
    assert response.status_code == 422
    assert [(e["field"], e["location"]) for e in response.json()["errors"]] == [("limit", "query")]


def test_recall_reads_the_window_a_runtime_passes_and_says_so(client: TestClient[Any]) -> None:
    client.post("/v1/turns", json={"turns": [turn(0, "user", "My sister Hana moved to Osaka.")]})
    client.post("/v1/sessions/s1/close", json={"closed_at": "2025-03-02T18:10:00Z"})
    ask = {"character_id": "ava", "user_id": "tester-1", "message": "How is the move to Osaka going?",
           "session_id": "s2",
           "at": "2025-03-11T09:00:00Z"}
    window = [{"role": "user", "text": "I called Hana yesterday."}, {"role": "character", "text": "Oh nice!"}]
    body = client.post("/v1/recall?detail=full", json={**ask, "window": window}).json()
    assert body["trace"]["window_source"] == "passed" and body["trace"]["window_turns"] == 2
    hana = next(m for m in body["memories"] if m["text"].startswith("My sister Hana"))
    assert hana["window_anchors"] == ["Hana"] and hana["tier"] in ("low", "standard", "high")
    unwindowed = client.post("/v1/recall?detail=full", json={**ask, "window": []}).json()
    assert unwindowed["trace"]["window_source"] == "none"

    bad = client.post("/v1/recall", json={**ask, "window": [{"role": "narrator", "text": "x"}]})
    assert bad.status_code == 422 and "window.0.role" in [e["field"] for e in bad.json()["errors"]]
    too_long = client.post("/v1/recall", json={**ask, "window": [{"role": "user", "text": "hi"}] * 51})
    assert too_long.status_code == 422 and "window" in [e["field"] for e in too_long.json()["errors"]]
