"""The lifecycle endpoints with auth: facts by level and role, archive and restore, pins, a user's erasure with
its receipt, the review queue and the audit trail. Isolation holds here too: another user's memory is a 404."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.auth import KeyStore
from tests.inprocess import Clock, in_process


class Api:
    def __init__(self, client: TestClient[Any], keys: KeyStore, clock: Clock | None = None) -> None:
        self.client, self.keys, self.clock = client, keys, clock or Clock()
        self.tokens: dict[tuple[str, str], str] = {}

    def as_(self, role: str, org: str = "acme") -> dict[str, str]:
        token = self.tokens.get((org, role)) or self.keys.create(org, role)
        self.tokens[(org, role)] = token
        return {"Authorization": f"Bearer {token}"}

    def say(self, user: str, texts: list[str], session: str = "s1", org: str = "acme") -> list[str]:
        turns = [{"turn_id": f"{user}-{session}-{i}", "session_id": f"{user}-{session}", "character_id": "ava",
                  "user_id": user, "role": "user", "text": text, "timestamp": f"2025-01-10T09:0{i}:00Z"}
                 for i, text in enumerate(texts)]
        assert self.client.post("/v1/turns", json={"turns": turns}, headers=self.as_("runtime", org)).status_code == 200
        closed = self.client.post(f"/v1/sessions/{user}-{session}/close", json={"closed_at": "2025-01-10T10:00:00Z"},
                                  headers=self.as_("runtime", org))
        assert closed.status_code == 200, closed.text
        page = self.client.get("/v1/memories", params={"character_id": "ava", "user_id": user},
                               headers=self.as_("runtime", org)).json()
        return [item["memory"]["memory_id"] for item in page["items"] if item["memory"]["kind"] == "turn"]

    def recall(self, user: str, message: str, org: str = "acme") -> list[dict[str, Any]]:
        response = self.client.post("/v1/recall", headers=self.as_("runtime", org), json={
            "character_id": "ava", "user_id": user, "message": message})  # now: after every write
        assert response.status_code == 200, response.text
        return list(response.json()["memories"])


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with in_process(tmp_path, transcript_dirs=None) as running, TestClient(running.app) as client:
        yield Api(client, running.keys, running.clock)


def fact(scope: str, sentence: str, value: str, **extra: str) -> dict[str, str]:
    return {"scope": scope, "character_id": "ava", "subject": "ava", "relation": "home_town", "value": value,
            "sentence": sentence, **extra}


def test_who_may_write_facts_at_which_level_and_with_what_status(api: Api) -> None:
    canon = fact("canon", "Ava grew up in Galway.", "Galway")
    assert api.client.post("/v1/facts", json=canon, headers=api.as_("runtime")).status_code == 403
    written = api.client.post("/v1/facts", json=canon, headers=api.as_("director"))
    assert written.status_code == 200 and written.json()["status"] == "active"
    # A director's shared fact waits for review; an admin's is active; a status sent by a caller is refused.
    shared = fact("shared", "The studio is in Porto.", "Porto", subject="studio")
    assert api.client.post("/v1/facts", json=shared, headers=api.as_("director")).json()["status"] == "provisional"
    assert api.client.post("/v1/facts", json={**shared, "status": "active"},
                           headers=api.as_("admin")).status_code == 422
    # Admins manage shared memory but never write (or read) a user's private facts.
    mine = fact("user", "The user lives in Lisbon.", "Lisbon", subject="user", relation="lives_in", user_id="u1")
    assert api.client.post("/v1/facts", json=mine, headers=api.as_("admin")).status_code == 403
    assert api.client.post("/v1/facts", json=mine, headers=api.as_("runtime")).json()["status"] == "active"
    assert api.client.get("/v1/facts", params={"scope": "user", "character_id": "ava", "user_id": "u1"},
                          headers=api.as_("admin")).status_code == 403
    listed = api.client.get("/v1/facts", params={"scope": "canon", "character_id": "ava"},
                            headers=api.as_("runtime")).json()
    assert [f["fact"]["text"] for f in listed] == ["Ava grew up in Galway."]
    # Another organisation sees none of it.
    assert api.client.get("/v1/facts", params={"scope": "canon", "character_id": "ava"},
                          headers=api.as_("director", org="other")).json() == []


def test_archive_restore_and_the_audit_flag(api: Api) -> None:
    [walk] = api.say("u1", ["We walked in the park every morning."])
    where = {"character_id": "ava", "user_id": "u1"}
    assert [m["memory_id"] for m in api.recall("u1", "a walk in the park")] == [walk]
    archived = api.client.post(f"/v1/memories/{walk}/archive", params=where, headers=api.as_("runtime"))
    assert archived.status_code == 200 and archived.json()["state"]["status"] == "archived"
    assert api.recall("u1", "a walk in the park") == []
    listed = api.client.get("/v1/memories", params=where, headers=api.as_("runtime")).json()["items"]
    assert [i["memory"]["memory_id"] for i in listed if i["memory"]["kind"] == "turn"] == []
    audited = api.client.get("/v1/memories", params={**where, "archived": True}, headers=api.as_("runtime")).json()
    assert [i["memory"]["memory_id"] for i in audited["items"]] == [walk]
    # Another user's runtime request, or an admin, cannot touch it: 404 and 403, never the memory.
    assert api.client.post(f"/v1/memories/{walk}/restore", params={**where, "user_id": "u2"},
                           headers=api.as_("runtime")).status_code == 404
    assert api.client.post(f"/v1/memories/{walk}/restore", params={"character_id": "ava"},
                           headers=api.as_("admin")).status_code == 404
    restored = api.client.post(f"/v1/memories/{walk}/restore", params=where, headers=api.as_("runtime"))
    assert restored.json()["state"]["status"] == "active"
    assert [m["memory_id"] for m in api.recall("u1", "a walk in the park")] == [walk]
    pinned = api.client.post(f"/v1/memories/{walk}/pin", params=where, json={"pinned": True},
                             headers=api.as_("runtime"))
    assert pinned.json()["state"]["pinned"] is True
    events = api.client.get("/v1/audit", params=where, headers=api.as_("runtime")).json()
    assert [e["event"] for e in events if e["memory_id"] == walk] == ["archived", "restored", "pinned"]


def test_a_users_erasure_returns_a_receipt_and_leaves_others_alone(api: Api) -> None:
    mine = api.say("u1", ["My secret is the blue door.", "I moved to Lisbon last week."])
    theirs = api.say("u2", ["The blue door is lovely."])
    erased = api.client.delete("/v1/users/u1", params={"character_id": "ava", "strict": True},
                               headers=api.as_("runtime"))
    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert set(receipt["memories"]) == set(mine) and len(receipt["facts"]) == 1 and receipt["turns"] == 2
    assert api.recall("u1", "blue door Lisbon") == []
    assert api.client.get("/v1/memories", params={"character_id": "ava", "user_id": "u1", "archived": True},
                          headers=api.as_("runtime")).json()["items"] == []
    assert [m["memory_id"] for m in api.recall("u2", "blue door")] == theirs
    # The audit skeleton stays, without content, and (strict) without names.
    events = api.client.get("/v1/audit", params={"character_id": "ava", "user_id": "u1"},
                            headers=api.as_("runtime")).json()
    assert events and all(e["names"] is None for e in events if e["event"] == "erased")
    assert "blue" not in str(events) and "Lisbon" not in str(events)


def test_the_review_queue_over_http(api: Api) -> None:
    shared = fact("shared", "The studio is in Porto.", "Porto", subject="studio")
    for _ in range(2):  # stated twice and left standing two months: the sweep proposes promoting it
        api.client.post("/v1/facts", json=shared, headers=api.as_("director"))
    api.clock.later(days=60)
    assert api.client.post("/v1/maintenance/sweep", headers=api.as_("runtime")).status_code == 403
    api.say("u1", ["Hello!"])  # a partition the sweep visits, whose levels include the shared one
    swept = api.client.post("/v1/maintenance/sweep", headers=api.as_("admin"))
    assert swept.status_code == 200 and swept.json()["proposed"] == 1
    queue = api.client.get("/v1/review", params={"character_id": "ava"}, headers=api.as_("admin")).json()
    [item] = queue
    assert item["kind"] == "promote" and "~shared" in item["partition"] and "acme" not in item["partition"]
    assert "studio" not in str(api.recall("u1", "where is the studio")).lower()
    kept = api.client.post(f"/v1/review/{item['item_id']}", params={"character_id": "ava"},
                           json={"decision": "kept"}, headers=api.as_("admin"))
    assert kept.status_code == 200 and kept.json()["decision"] == "kept"
    assert any("Porto" in m["text"] for m in api.recall("u1", "where is the studio"))
    again = api.client.post(f"/v1/review/{item['item_id']}", params={"character_id": "ava"},
                            json={"decision": "kept"}, headers=api.as_("admin"))
    assert again.status_code == 422
    reverted = api.client.post(f"/v1/review/{item['item_id']}", params={"character_id": "ava"},
                               json={"decision": "reverted"}, headers=api.as_("admin"))
    assert reverted.json()["decision"] == "reverted"
    assert not any("Porto" in m["text"] for m in api.recall("u1", "where is the studio"))


def test_canon_records_and_the_recall_log_over_http(api: Api) -> None:
    lore = {"text": "Ava grew up in Galway.\n\nShe still misses the sea."}
    assert api.client.put("/v1/characters/ava/canon/childhood", json=lore,
                          headers=api.as_("runtime")).status_code == 403
    written = api.client.put("/v1/characters/ava/canon/childhood", json=lore, headers=api.as_("director"))
    assert written.status_code == 200 and written.json()["state"]["pinned"] is True
    api.say("u1", ["We walked in the park every morning."])
    response = api.client.post("/v1/recall", headers=api.as_("runtime"), json={
        "character_id": "ava", "user_id": "u1", "message": "a walk in the park"})
    result = response.json()
    assert result["context"]["prefix"].count("She still misses the sea.") == 1
    assert result["context"]["system"].startswith(result["context"]["prefix"])

    where = {"character_id": "ava", "user_id": "u1"}
    logged = api.client.get(f"/v1/recalls/{result['recall_id']}", params=where, headers=api.as_("evaluator"))
    assert logged.status_code == 200 and logged.json() == result
    # Another user, or another organisation, gets 404, never the turn.
    assert api.client.get(f"/v1/recalls/{result['recall_id']}", params={**where, "user_id": "u2"},
                          headers=api.as_("runtime")).status_code == 404
    assert api.client.get(f"/v1/recalls/{result['recall_id']}", params=where,
                          headers=api.as_("runtime", org="other")).status_code == 404
