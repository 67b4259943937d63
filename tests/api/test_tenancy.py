"""Every endpoint with auth: roles, and isolation across users and organisations (404, never the memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.auth import KeyStore
from engine.adapters.sqlite_tuning import SqliteTuningStore
from tests.fakes import hashing_engine_in
from tests.inprocess import in_process
from tests.keys import sqlite_key_store

SECRET = "My secret is the blue door and Luna died."


class Api:
    def __init__(self, client: TestClient[Any], keys: KeyStore) -> None:
        self.client, self.keys = client, keys
        self.tokens: dict[tuple[str, str], str] = {}

    def as_(self, org: str, role: str) -> dict[str, str]:
        token = self.tokens.get((org, role)) or self.keys.create(org, role)
        self.tokens[(org, role)] = token
        return {"Authorization": f"Bearer {token}"}

    def ingest(self, org: str, user: str, text: str = SECRET, session: str = "s1") -> None:
        turn = {"turn_id": f"{session}-{user}", "session_id": session, "character_id": "ava", "user_id": user,
                "role": "user", "text": text, "timestamp": "2025-03-02T18:00:00Z"}
        response = self.client.post("/v1/turns", json={"turns": [turn]}, headers=self.as_(org, "runtime"))
        assert response.status_code == 200, response.text

    def memory_id(self, org: str, user: str) -> str:
        page = self.client.get("/v1/memories", params={"character_id": "ava", "user_id": user},
                               headers=self.as_(org, "runtime")).json()
        return str(page["items"][0]["memory"]["memory_id"])


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with in_process(tmp_path, transcript_dirs=None) as running, TestClient(running.app) as client:
        yield Api(client, running.keys)


def test_no_key_or_a_bad_key_is_401_problem_details(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer fs_0000000000000000_notarealsecretnotarealsecret"}):
        response = api.client.post("/v1/recall", json={"character_id": "ava", "user_id": "u", "message": "hi"},
                                   headers=headers)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(("role", "method", "path", "allowed"), [
    ("director", "POST", "/v1/turns", False),
    ("evaluator", "POST", "/v1/turns", False),
    ("admin", "GET", "/v1/memories", False),
    ("evaluator", "GET", "/v1/memories", True),
    ("runtime", "PUT", "/v1/characters/ava/tuning", False),
    ("director", "PUT", "/v1/characters/ava/tuning", True),
    ("evaluator", "DELETE", "/v1/memories/m_x", False),
])
def test_roles_decide_what_a_key_may_do(api: Api, role: str, method: str, path: str, allowed: bool) -> None:
    turn = {"turn_id": "t", "session_id": "s", "character_id": "ava", "user_id": "u1", "role": "user",
            "text": "hello", "timestamp": "2025-03-02T18:00:00Z"}
    body: dict[str, Any] | None = {"turns": [turn]} if path == "/v1/turns" else ({} if method == "PUT" else None)
    params = {"character_id": "ava", "user_id": "u1"} if "memories" in path else None
    response = api.client.request(method, path, json=body, params=params, headers=api.as_("acme", role))
    assert (response.status_code != 403) == allowed, response.text


def test_another_users_memory_is_not_found_never_shown(api: Api) -> None:
    api.ingest("acme", "u1")
    memory_id = api.memory_id("acme", "u1")
    runtime = api.as_("acme", "runtime")
    for path in (f"/v1/memories/{memory_id}", f"/v1/memories/{memory_id}/trace"):
        assert api.client.get(path, params={"character_id": "ava", "user_id": "u1"}, headers=runtime).status_code \
            == 200
        other = api.client.get(path, params={"character_id": "ava", "user_id": "u2"}, headers=runtime)
        assert other.status_code == 404 and "blue door" not in other.text
    listed = api.client.get("/v1/memories", params={"character_id": "ava", "user_id": "u2"}, headers=runtime)
    assert listed.json()["items"] == []
    searched = api.client.get("/v1/memories", params={"character_id": "ava", "user_id": "u2", "q": "blue door"},
                              headers=runtime)
    assert searched.status_code == 200 and "blue door" not in searched.text
    deleted = api.client.delete(f"/v1/memories/{memory_id}", params={"character_id": "ava", "user_id": "u2"},
                                headers=runtime)
    assert deleted.status_code == 404
    assert api.memory_id("acme", "u1") == memory_id  # still there


def test_another_organisations_data_is_unreachable(api: Api) -> None:
    api.ingest("acme", "u1")
    memory_id = api.memory_id("acme", "u1")
    rival = api.as_("rival", "runtime")
    same_names = {"character_id": "ava", "user_id": "u1"}
    assert api.client.get(f"/v1/memories/{memory_id}", params=same_names, headers=rival).status_code == 404
    assert api.client.get("/v1/memories", params=same_names, headers=rival).json()["items"] == []
    recall = api.client.post("/v1/recall", json={**same_names, "message": "the blue door"}, headers=rival).json()
    assert recall["memories"] == [] and "blue door" not in str(recall)
    assert api.client.post("/v1/sessions/s1/close", headers=rival).status_code == 404
    # The same turn id in another organisation is a different turn: stored, not a duplicate.
    api.ingest("rival", "u1", text="rival's own words")
    assert api.client.get("/v1/memories", params=same_names, headers=rival).json()["items"][0]["memory"]["text"] \
        == "rival's own words"


def test_memories_list_search_read_and_delete(api: Api) -> None:
    api.ingest("acme", "u1")
    api.ingest("acme", "u1", text="Lunch was a sandwich.", session="s2")
    runtime, names = api.as_("acme", "runtime"), {"character_id": "ava", "user_id": "u1"}
    page = api.client.get("/v1/memories", params={**names, "limit": 1}, headers=runtime).json()
    assert len(page["items"]) == 1 and page["next_offset"] == 1
    assert page["items"][0]["memory"]["session_id"] == "s1" and page["items"][0]["memory"]["character_id"] == "ava"
    found = api.client.get("/v1/memories", params={**names, "q": "sandwich"}, headers=runtime).json()
    assert found["items"][0]["memory"]["text"] == "Lunch was a sandwich."
    memory_id = found["items"][0]["memory"]["memory_id"]
    erased = api.client.delete(f"/v1/memories/{memory_id}", params=names, headers=runtime)
    assert erased.status_code == 200 and erased.json()["memories"] == [memory_id]
    assert api.client.get(f"/v1/memories/{memory_id}", params=names, headers=runtime).status_code == 404


def test_tuning_is_validated_versioned_and_kept_per_organisation(api: Api) -> None:
    director = api.as_("acme", "director")
    default = api.client.get("/v1/characters/ava/tuning", headers=director).json()
    assert default["version"] == 1 and default["character_id"] == "ava"
    bad = api.client.put("/v1/characters/ava/tuning", json={"scoring": {"anchor_boost": 0.2}}, headers=director)
    assert bad.status_code == 422 and "anchor_boost" in bad.json()["detail"]
    saved = api.client.put("/v1/characters/ava/tuning",
                           json={"scoring": {"half_life_days_per_intensity_squared": 50}, "note": "longer care"},
                           headers=director)
    assert saved.status_code == 200 and saved.json()["version"] == 2
    history = api.client.get("/v1/characters/ava/tuning/history", headers=director).json()
    assert [v["version"] for v in history] == [2, 1]
    assert history[0]["note"] == "longer care" and history[0]["author"].startswith("director:")
    assert history[1]["profile"]["scoring"]["half_life_days_per_intensity_squared"] == pytest.approx(100 / 3)
    rival = api.client.get("/v1/characters/ava/tuning", headers=api.as_("rival", "director")).json()
    assert rival["version"] == 1


def test_a_key_made_by_the_cli_works_until_revoked_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval.cli import main

    data = tmp_path / "data"
    assert main(["keys", "create", "--org", "acme", "--role", "runtime", "--label", "ava prod", "--data-dir",
                 str(data)]) == 0
    token = capsys.readouterr().out.strip()
    key_id = token.split("_")[1]

    engine = hashing_engine_in(tmp_path / "store")
    keys = sqlite_key_store(data / "keys.sqlite3")  # what `feltsense serve --data-dir` opens
    query = {"character_id": "ava", "user_id": "u", "message": "hi"}
    with TestClient(create_app(engine, keys=keys, tuning=SqliteTuningStore(tmp_path / "t.sqlite3"))) as client:
        assert client.post("/v1/recall", json=query, headers={"Authorization": f"Bearer {token}"}).status_code == 200

        assert main(["keys", "list", "--data-dir", str(data)]) == 0
        listed = capsys.readouterr().out
        [line] = [line for line in listed.splitlines() if line.startswith(key_id)]
        assert {"org=acme", "role=runtime", "active"} <= set(line.split()) and line.endswith("ava prod")
        assert token.split("_", 2)[2] not in listed  # never the secret

        assert main(["keys", "revoke", key_id, "--data-dir", str(data)]) == 0
        assert client.post("/v1/recall", json=query, headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert main(["keys", "list", "--data-dir", str(data)]) == 0
        assert "revoked 20" in capsys.readouterr().out

    assert main(["keys", "revoke", "0123456789abcdef", "--data-dir", str(data)]) == 2
    assert "no key with id" in capsys.readouterr().err
    engine.close()
