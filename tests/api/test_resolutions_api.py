"""Resolutions over HTTP: a user's are listed (ids, registers, times, labels: never what was said), and a
director undoes one; the undo is audited and the tone is in force again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from litestar.testing import TestClient

from tests.inprocess import KeyedClient, in_process

T0 = datetime(2025, 3, 2, 18, tzinfo=UTC)
SESSIONS = [
    ("s1", 0, ["I'm worried about the scan on Friday.", "The scan is for my lungs and I'm worried sick."]),
    ("s2", 7, ["Great news: the scan came back clear, such a relief!"]),
]


Api = KeyedClient


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with in_process(tmp_path, transcript_dirs=None) as running, TestClient(running.app) as client:
        yield Api(client, running.keys)


def _converse(api: Api, runtime: dict[str, str]) -> None:
    for session, day, texts in SESSIONS:
        start = T0 + timedelta(days=day)
        turns = [{"turn_id": f"{session}-{i}", "session_id": session, "character_id": "ava", "user_id": "u1",
                  "role": "user", "text": text, "timestamp": (start + timedelta(seconds=30 * i)).isoformat()}
                 for i, text in enumerate(texts)]
        assert api.client.post("/v1/turns", json={"turns": turns}, headers=runtime).status_code == 200
        closed = api.client.post(f"/v1/sessions/{session}/close",
                                 json={"closed_at": (start + timedelta(minutes=5)).isoformat()}, headers=runtime)
        assert closed.status_code == 200


def _tone(api: Api, runtime: dict[str, str]) -> set[str]:
    body = {"character_id": "ava", "user_id": "u1", "message": "About the scan follow-up...",
            "at": (T0 + timedelta(days=10)).isoformat()}
    answer = api.client.post("/v1/recall", json=body, headers=runtime).json()
    return {c["register"] for c in answer["tone_constraints"] + answer["standing_rules"]}


def test_a_director_lists_and_undoes_a_resolution(api: Api) -> None:
    runtime, director = api.as_("runtime"), api.as_("director")
    _converse(api, runtime)
    assert "anxiety" not in _tone(api, runtime)
    query = {"character_id": "ava", "user_id": "u1"}
    listed = api.client.get("/v1/resolutions", params=query, headers=director)
    assert listed.status_code == 200
    rows = listed.json()
    assert len(rows) == 2 and {r["register"] for r in rows} == {"anxiety"}
    assert all(r["note"].startswith(f"resolved by {r['resolved_by']} on ") and r["undone_at"] is None for r in rows)
    assert not any("scan" in str(value) for r in rows for value in r.values()), "no words of the user"

    refused = api.client.post(f"/v1/resolutions/{rows[0]['memory_id']}/undo", params=query, headers=runtime)
    assert refused.status_code == 403
    undone = api.client.post(f"/v1/resolutions/{rows[0]['memory_id']}/undo", params=query, headers=director)
    assert undone.status_code == 200
    assert {r["memory_id"] for r in undone.json()} == {r["memory_id"] for r in rows}  # the whole episode
    assert "anxiety" in _tone(api, runtime)
    after = api.client.get("/v1/resolutions", params={**query, "undone": "false"}, headers=director).json()
    assert after == []
    again = api.client.post(f"/v1/resolutions/{rows[0]['memory_id']}/undo", params=query, headers=director)
    assert again.status_code == 404
    audit = api.client.get("/v1/audit", params=query, headers=runtime).json()
    assert [e["event"] for e in audit if e["memory_id"] == rows[0]["memory_id"]][-1] == "resolution_undone"


def test_another_organisations_resolutions_are_not_found(api: Api) -> None:
    _converse(api, api.as_("runtime"))
    other = api.as_("director", org="globex")
    query = {"character_id": "ava", "user_id": "u1"}
    assert api.client.get("/v1/resolutions", params=query, headers=other).json() == []
    memory_id = api.client.get("/v1/resolutions", params=query, headers=api.as_("director")).json()[0]["memory_id"]
    assert api.client.post(f"/v1/resolutions/{memory_id}/undo", params=query, headers=other).status_code == 404
